package cloud

import (
	"os"
	"regexp"
	"strings"
)

// secretEnv lists the environment variables whose values are credentials
// read by the SDKs (AWS, Azure). Their values never appear in fdl's errors.
var secretEnv = []string{
	"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
	"AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN",
	"AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGEBLOB_CONNECTIONSTRING",
	"AZURE_CLIENT_SECRET",
}

// secretRE matches credentials that can appear inside a request URL or a
// connection string quoted in an SDK's error: an Azure account key or SAS
// signature, AWS presigned-URL signatures and tokens.
var secretRE = regexp.MustCompile(`(?i)(AccountKey=|SharedAccessSignature=|[?&]sig=|X-Amz-Signature=|X-Amz-Credential=|X-Amz-Security-Token=)[^;&\s"'<>]+`)

// RedactString removes credentials from s: the values of the variables in
// secretEnv (and each secret part of a connection string held in one), and
// anything secretRE matches. Removed text reads "xxxxx".
func RedactString(s string) string {
	for _, name := range secretEnv {
		v := os.Getenv(name)
		if len(v) < 6 {
			continue
		}
		s = strings.ReplaceAll(s, v, "xxxxx")
		for _, part := range strings.Split(v, ";") {
			if k, val, ok := strings.Cut(part, "="); ok && len(val) >= 6 && isSecretField(k) {
				s = strings.ReplaceAll(s, val, "xxxxx")
			}
		}
	}
	return secretRE.ReplaceAllString(s, "${1}xxxxx")
}

func isSecretField(k string) bool {
	switch strings.ToLower(k) {
	case "accountkey", "sharedaccesssignature":
		return true
	}
	return false
}

// RedactSecrets returns err with credentials removed from its message
// (RedactString). errors.Is and errors.As still see the original chain.
func RedactSecrets(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if red := RedactString(msg); red != msg {
		return &redactedError{msg: red, err: err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
