package repo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/retention"
)

// Reading gc's deletion intents (docs/spec.md §16.1), which a push and gc
// both read: a push before it moves its branch (confirmPush), gc before
// it deletes (package gc, which writes, renews and drops its own). The
// intent's format is retention's (retention.Intent).

// StoredIntent is a deletion intent as the store holds it: the intent,
// its key (retention/deleting/<id>.json) and the store's modification time
// of its object (the store's clock, which decides its lease).
type StoredIntent struct {
	*retention.Intent
	Key     string
	ModTime time.Time
}

// Intents reads every deletion intent under retention/deleting/ (docs/spec.md
// §16.1). One that does not parse counts as listing every key (it errs on
// the side of the push and the other gc: its Keys is nil, and Holds
// answers true for any key); one deleted meanwhile (its gc finished) is
// left out. Errors: the store's, naming the key or prefix.
func (r *Repo) Intents(ctx context.Context) ([]StoredIntent, error) {
	var infos []store.ObjectInfo
	if err := r.st.List(ctx, retention.IntentPrefix, func(oi store.ObjectInfo) error {
		if retention.IsIntentKey(oi.Key) {
			infos = append(infos, oi)
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("list %s: %w", retention.IntentPrefix, err)
	}
	out := make([]StoredIntent, 0, len(infos))
	for _, oi := range infos {
		b, _, err := store.ReadAll(ctx, r.st, oi.Key)
		if errors.Is(err, store.ErrNotExist) {
			continue // its gc finished meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", oi.Key, err)
		}
		in, err := retention.ParseIntent(b, oi.Key)
		if err != nil {
			in = &retention.Intent{Keys: nil} // unreadable: treated as holding everything
		}
		out = append(out, StoredIntent{Intent: in, Key: oi.Key, ModTime: oi.ModTime})
	}
	return out, nil
}

// Holds reports whether intent i may delete key (an intent that does not
// parse may delete anything).
func (i StoredIntent) Holds(key string) bool {
	return i.Intent.Keys == nil || i.Has(key)
}

// Expired reports whether i no longer holds at store time now (docs/spec.md
// §16.1): its lease (retention.IntentLease) ran out by the store's clock,
// or it was written on this machine (HostName) by a process other than
// this one that is no longer running. An intent that does not parse
// expires only with its lease.
func (i StoredIntent) Expired(now time.Time) bool {
	if now.Sub(i.ModTime) > retention.IntentLease {
		return true
	}
	return i.Intent.Keys != nil && i.Host != "" && i.Host == HostName() && i.PID > 0 && i.PID != os.Getpid() && !processAlive(i.PID)
}

// HostName is this machine's name as deletion intents record it (their
// host field, docs/spec.md §16.1; "" when it cannot be read): an intent
// whose host is this one and whose process is gone holds no more.
func HostName() string {
	h, _ := os.Hostname()
	return h
}
