package store

import "fmt"

// HTMLAnswerError: the server answered 200 with an HTML page where fdl
// asked for an object of the repository, none of which is HTML: a wrong
// URL (a web site's page), or a server that answers every path it has no
// file for with its web app's page (a single-page app's fallback) instead
// of 404. It wraps ErrNotExist: the object is not there.
type HTMLAnswerError struct {
	URL string // the object's URL, without credentials
}

func (e *HTMLAnswerError) Error() string {
	return fmt.Sprintf("%s: the server answered with an HTML page (text/html), not the object: a wrong URL, or a web server that answers paths it has no file for with its app's page instead of 404; check the repository URL (the folder that holds fdl.json), or make the server answer 404 for missing files: %v",
		e.URL, ErrNotExist)
}

func (e *HTMLAnswerError) Unwrap() error { return ErrNotExist }
