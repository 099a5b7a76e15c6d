package store_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/store"
)

// fakeStore is what a fake backend opens: it records how Open called it.
type fakeStore struct {
	store.Store // nil: only the fields below are used
	kind        string
	u           *url.URL
	redacted    string
}

// fake returns a backend that opens a *fakeStore named kind.
func fake(kind string, schemes, forms []string) store.Backend {
	return store.Backend{Schemes: schemes, Forms: forms, Open: func(_ context.Context, u *url.URL, redacted string) (store.Store, error) {
		return &fakeStore{kind: kind, u: u, redacted: redacted}, nil
	}}
}

// registerThree registers a folder, a test-only and a web backend, after
// forgetting any registered before.
func registerThree() {
	store.ResetRegistryForTest()
	store.Register(fake("folder", []string{"", "file"}, []string{"a folder path", "file://"}))
	store.Register(fake("test", []string{"mem"}, nil))
	store.Register(fake("web", []string{"HTTP", "https"}, []string{"http(s)://"}))
}

func TestOpenNothingRegistered(t *testing.T) {
	store.ResetRegistryForTest()
	for _, raw := range []string{"", "/some/folder", "s3://b/p"} {
		_, err := store.Open(t.Context(), raw)
		if err == nil || !strings.Contains(err.Error(), "registers no kind of store (store.Register)") {
			t.Errorf("Open(%q) with nothing registered = %v, want it to say no store is registered", raw, err)
		}
	}
}

func TestOpenRegistry(t *testing.T) {
	ctx := t.Context()
	registerThree()

	cases := []struct{ raw, kind, path, redacted string }{
		{"relative/dir", "folder", "relative/dir", "relative/dir"},
		{"/abs/dir", "folder", "/abs/dir", "/abs/dir"},
		{"file:///abs/dir", "folder", "/abs/dir", "file:///abs/dir"},
		{"FILE:///abs/dir", "folder", "/abs/dir", "file:///abs/dir"},
		{"mem://x", "test", "", "mem://x"},
		{"https://u:secret@host/p", "web", "/p", "https://u:xxxxx@host/p"},
		{"http://host/p", "web", "/p", "http://host/p"},
	}
	for _, c := range cases {
		s, err := store.Open(ctx, c.raw)
		if err != nil {
			t.Errorf("Open(%q): %v", c.raw, err)
			continue
		}
		f := s.(*fakeStore)
		if f.kind != c.kind || f.u.Path != c.path || f.redacted != c.redacted {
			t.Errorf("Open(%q) reached %s with path %q, redacted %q; want %s, %q, %q", c.raw, f.kind, f.u.Path, f.redacted, c.kind, c.path, c.redacted)
		}
		if c.kind == "folder" && !strings.Contains(c.raw, "://") && f.u.Scheme != "" {
			t.Errorf("Open(%q): a plain path reached the backend with scheme %q, want none", c.raw, f.u.Scheme)
		}
	}

	const use = "use a folder path, file:// or http(s)://"
	errs := []struct{ raw, want string }{
		{"", "empty store URL: " + use},
		{"ftp://host/x", `unsupported store URL "ftp://host/x": ` + use},
		{"ftp://user:secret@example.com/x", `unsupported store URL "ftp://user:xxxxx@example.com/x"`},
		{"weird+scheme://x", `unsupported store URL "weird+scheme://x"`},
	}
	for _, c := range errs {
		s, err := store.Open(ctx, c.raw)
		if err == nil {
			t.Errorf("Open(%q) = %v, want an error", c.raw, s)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%q) error = %q, want it to contain %q", c.raw, err, c.want)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%q) error shows the password: %q", c.raw, err)
		}
	}
}

// Registering a scheme again replaces its backend where it stood: the
// messages keep their order, and a backend left with no scheme is gone.
func TestRegisterReplaces(t *testing.T) {
	ctx := t.Context()
	registerThree()
	store.Register(fake("folder2", []string{"", "file"}, []string{"a folder path", "file://"}))
	store.Register(fake("cloud", []string{"s3"}, []string{"s3://"}))
	store.Register(fake("web2", []string{"http", "https"}, []string{"http(s)://"}))
	s, err := store.Open(ctx, "/x")
	if err != nil || s.(*fakeStore).kind != "folder2" {
		t.Fatalf("Open(/x) after re-registering = %v, %v, want folder2", s, err)
	}
	_, err = store.Open(ctx, "ftp://x")
	if want := "use a folder path, file://, http(s):// or s3://"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Open(ftp://x) = %v, want %q", err, want)
	}
	// One backend takes https alone: the old one keeps http.
	store.Register(fake("tls", []string{"https"}, []string{"https://"}))
	for raw, want := range map[string]string{"http://h/p": "web2", "https://h/p": "tls"} {
		if s, err := store.Open(ctx, raw); err != nil || s.(*fakeStore).kind != want {
			t.Errorf("Open(%q) = %v, %v, want %s", raw, s, err, want)
		}
	}
	if s, err := store.Open(ctx, "mem://x"); err != nil || s.(*fakeStore).kind != "test" {
		t.Errorf("Open(mem://x) = %v, %v, want the test backend kept", s, err)
	}
}

// TestMistypedURLRedacted: the URL a mistyped one meant, which the error
// suggests, hides its credentials too. It showed a token ("s3:/tok123@b")
// and a password after a user name that is no scheme ("s3:/my_user:pw@b")
// as given: FuzzRedactURL found it.
func TestMistypedURLRedacted(t *testing.T) {
	registerThree()
	for raw, meant := range map[string]string{
		"s3:/tok123@bucket/p":         "s3://xxxxx@bucket/p",
		"s3:/my_user:pw123@bucket/p":  "s3://my_user:xxxxx@bucket/p",
		"gs//tok123@bucket/p":         "gs://xxxxx@bucket/p",
		"s3:bucket/p?sig=abc123&x=1":  "s3://bucket/p?sig=xxxxx&x=1",
		"S3:/user:pw123@bucket/p?a=b": "s3://user:xxxxx@bucket/p?a=b",
	} {
		_, err := store.Open(t.Context(), raw)
		if err == nil || !strings.Contains(err.Error(), `did you mean "`+meant+`"`) {
			t.Errorf("Open(%q) = %v, want it to suggest %q", raw, err, meant)
		}
		for _, secret := range []string{"tok123", "pw123", "abc123"} {
			if err != nil && strings.Contains(err.Error(), secret) {
				t.Errorf("Open(%q) shows the credential %q: %v", raw, secret, err)
			}
		}
	}
}

// TestOpenRedactsParsedForm: the URL Open hands a backend for its messages
// is the parsed form, which can spell a credential otherwise than the URL
// as given (in a fragment net/url writes again, because of its space, an
// escaped "&" comes back unescaped and splits the value in two for
// RedactURL): it hides what the given URL carries. FuzzRedactURL found it.
func TestOpenRedactsParsedForm(t *testing.T) {
	registerThree()
	raw := "http://h/p#f g?a=1&secret_access_key=ab%26cd"
	s, err := store.Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	if red := s.(*fakeStore).redacted; strings.Contains(red, "ab&cd") || strings.Contains(red, "ab%26cd") || strings.Contains(red, "cd") {
		t.Errorf("Open(%q) gave the backend %q", raw, red)
	}
}
