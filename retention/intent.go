package retention

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fdl-dev/fdl/version"
)

// IntentPrefix is the store key prefix of gc's deletion intents:
// retention/deleting/<id>.json (docs/spec.md §16).
const IntentPrefix = "retention/deleting/"

// IntentLease is how long a deletion intent holds, by the store's clock
// from when it was written: the gc that wrote it deletes nothing once
// IntentRenew has passed on its own clock since it began writing it
// (it writes a new intent first, or stops), and everyone else treats an
// intent older than IntentLease as the record of a gc that stopped.
const (
	IntentLease = 10 * time.Minute
	IntentRenew = 4 * time.Minute
)

// Intent is retention/deleting/<id>.json: written create-only by gc before
// it deletes anything, listing every key it may delete; a push that needs
// one of them does not move its branch while the intent holds (docs/spec.md
// §16.1).
type Intent struct {
	Format int `json:"format"`
	// ID is a UUIDv7 made by the writer; the key is IntentPrefix + ID +
	// ".json".
	ID        version.ID `json:"id"`
	StartedAt time.Time  `json:"started_at"`
	By        string     `json:"by"`
	// Host and PID name the process that wrote it: on the same host, a
	// process that is no longer running holds no intent, whatever its
	// lease says (a gc killed there is followed at once by the next).
	Host string `json:"host,omitempty"`
	PID  int    `json:"pid,omitempty"`
	// Floor is the floor generation the gc deletes under.
	Floor int64 `json:"floor"`
	// Keys are the store keys gc may delete, sorted: data files, the
	// catalogs and dataset.json of retired versions, the objects of
	// abandoned version folders. It deletes nothing else.
	Keys []string `json:"keys"`
}

// IntentKey returns the key of intent id.
func IntentKey(id version.ID) string { return IntentPrefix + string(id) + ".json" }

// Marshal returns the intent's JSON (two-space indented, trailing newline),
// its keys sorted.
func (i *Intent) Marshal() ([]byte, error) {
	slices.Sort(i.Keys)
	b, err := json.MarshalIndent(i, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Has reports whether key is one the intent may delete.
func (i *Intent) Has(key string) bool {
	_, ok := slices.BinarySearch(i.Keys, key)
	return ok
}

// ParseIntent decodes an intent read from key. Errors wrap ErrInvalid.
func ParseIntent(b []byte, key string) (*Intent, error) {
	var i Intent
	if err := json.Unmarshal(b, &i); err != nil {
		return nil, fmt.Errorf("%s does not parse (%v): %w", key, err, ErrInvalid)
	}
	if i.Format < 1 || i.Format > Format {
		return nil, fmt.Errorf("%s: format %d is not one this fdl reads: %w", key, i.Format, ErrInvalid)
	}
	if IntentKey(i.ID) != key {
		return nil, fmt.Errorf("%s: its id %q does not match its key: %w", key, i.ID, ErrInvalid)
	}
	if !slices.IsSorted(i.Keys) {
		slices.Sort(i.Keys)
	}
	return &i, nil
}

// IsIntentKey reports whether key is a deletion intent's.
func IsIntentKey(key string) bool {
	return strings.HasPrefix(key, IntentPrefix) && strings.HasSuffix(key, ".json")
}
