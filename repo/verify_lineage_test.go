package repo_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/store"
	"github.com/fdl-dev/fdl/internal/testutil/history"
	"github.com/fdl-dev/fdl/refs"
	"github.com/fdl-dev/fdl/repo"
	"github.com/fdl-dev/fdl/version"
	"github.com/fdl-dev/fdl/workdir"
)

// TestVerifySnapshotGapIsANote: snapshot rows removed the way
// ducklake_expire_snapshots removes them leave a gap in snapshot ids; commit
// accepts it (docs/spec.md §10.6) and verify reports it as a note, not a
// problem: verify passes.
func TestVerifySnapshotGapIsANote(t *testing.T) {
	ctx := context.Background()
	h := history.BuildReal(t, 2, history.ChurnSQL)
	r := h.Repo
	// Expire snapshot 1 with the extension: its snapshot row and its
	// changes row go; rows that began there keep their begin_snapshot.
	h.Write(t, `SELECT count(*) FROM ducklake_expire_snapshots('lake', versions => [1]);
		INSERT INTO events VALUES (99)`)
	wd, _ := workdir.Open(h.WD)
	rec, err := wd.Commit(ctx, workdir.CommitOptions{Message: "after expiry", Author: "t"})
	if err != nil {
		t.Fatalf("commit of a catalog with an expired snapshot: %v", err)
	}
	if _, err := wd.Push(ctx, workdir.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	rep, err := r.Verify(ctx, repo.VerifyOptions{Data: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("a snapshot gap made verify fail: %+v", rep.Problems)
	}
	if len(rep.Notes) != 1 || rep.Notes[0].Code != "catalog-snapshot-gap" || rep.Notes[0].Object != string(rec.ID) ||
		!strings.Contains(rep.Notes[0].Message, "first missing id 1") {
		t.Fatalf("notes %+v, want one catalog-snapshot-gap on %s", rep.Notes, rec.ID)
	}
}

// TestVerifyLineage: a version whose catalog is not frozen at the snapshot
// its record names, and does not hold its parent's last snapshot, is
// reported (catalog-record-snapshot, catalog-timeline), although its
// catalog matches its record's digest.
func TestVerifyLineage(t *testing.T) {
	ctx := context.Background()
	h := history.BuildReal(t, 2, history.ChurnSQL)
	r := h.Repo
	first, head := h.Recs[0], h.Recs[1]
	// A forged version after head whose catalog is the first version's.
	id, err := version.NewIDAfter(head.ID)
	if err != nil {
		t.Fatal(err)
	}
	read := func(v version.ID, file string) []byte {
		t.Helper()
		b, _, err := store.ReadAll(ctx, r.Store(), repo.VersionKey(v, file))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ds, err := version.ParseDataset(read(first.ID, version.DatasetFile), first.ID)
	if err != nil {
		t.Fatal(err)
	}
	ds.Version = id
	dsb, _ := ds.Marshal()
	sum := sha256.Sum256(dsb)
	rec := *first
	rec.ID, rec.Parents, rec.Seq, rec.Message = id, []version.ID{head.ID}, head.Seq+1, "forged"
	rec.CreatedAt = head.CreatedAt
	rec.Dataset = version.File{Size: int64(len(dsb)), SHA256: hex.EncodeToString(sum[:])}
	rec.DuckLake.Adds = version.SnapshotRange{First: head.DuckLake.Snapshot + 1, Last: head.DuckLake.Snapshot + 1}
	rec.DuckLake.Snapshot = head.DuckLake.Snapshot + 1
	rb, err := rec.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for file, b := range map[string][]byte{version.CatalogFile: read(first.ID, version.CatalogFile), version.DatasetFile: dsb} {
		if err := r.Store().Create(ctx, repo.VersionKey(id, file), strings.NewReader(string(b))); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Store().Create(ctx, repo.VersionKey(id, version.RecordFile), strings.NewReader(string(rb))); err != nil {
		t.Fatal(err)
	}
	forged, _ := refs.Branch("forged")
	if _, err := r.Store().Swap(ctx, string(forged), store.NoToken, []byte(string(id)+"\n")); err != nil {
		t.Fatal(err)
	}
	rep, err := r.Verify(ctx, repo.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	codes := map[repo.Code]string{}
	for _, p := range rep.Problems {
		codes[p.Code] = p.Object
	}
	for _, code := range []repo.Code{repo.CodeCatalogRecord, repo.CodeCatalogTimeline} {
		if codes[code] != string(id) {
			t.Errorf("no %s on the forged version; problems: %+v", code, rep.Problems)
		}
	}
	if len(rep.Problems) != 2 {
		t.Errorf("problems %+v, want exactly the two lineage ones", rep.Problems)
	}
}
