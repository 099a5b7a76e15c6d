package azure

import (
	"os"
	"strings"
	"testing"

	"github.com/fdl-dev/fdl/internal/store"
)

// TestDescribeCreds: the source named follows gocloud's order (shared
// key, SAS, connection string) and, within azidentity's chain, the first
// credential whose variables are set: a CI job's workload identity
// (AZURE_CLIENT_ID, AZURE_TENANT_ID, AZURE_FEDERATED_TOKEN_FILE) is named
// as such.
func TestDescribeCreds(t *testing.T) {
	all := []string{"AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_CONNECTION_STRING",
		"AZURE_STORAGEBLOB_CONNECTIONSTRING", "AZURE_TOKEN_CREDENTIALS", "AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET",
		"AZURE_CLIENT_CERTIFICATE_PATH", "AZURE_USERNAME", "AZURE_FEDERATED_TOKEN_FILE"}
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"AZURE_STORAGE_ACCOUNT": "a", "AZURE_STORAGE_KEY": "k", "AZURE_STORAGE_CONNECTION_STRING": "c"}, "a shared key"},
		{map[string]string{"AZURE_STORAGE_SAS_TOKEN": "s", "AZURE_STORAGE_CONNECTION_STRING": "c"}, "a SAS token"},
		{map[string]string{"AZURE_STORAGEBLOB_CONNECTIONSTRING": "c"}, "a connection string"},
		{map[string]string{"AZURE_TENANT_ID": "t", "AZURE_CLIENT_ID": "c", "AZURE_FEDERATED_TOKEN_FILE": "/var/run/token"}, "workload identity"},
		{map[string]string{"AZURE_TENANT_ID": "t", "AZURE_CLIENT_ID": "c", "AZURE_CLIENT_SECRET": "s", "AZURE_FEDERATED_TOKEN_FILE": "/f"}, "environment credential"},
		{map[string]string{"AZURE_TOKEN_CREDENTIALS": "prod", "AZURE_TENANT_ID": "t", "AZURE_CLIENT_ID": "c", "AZURE_FEDERATED_TOKEN_FILE": "/f"}, "workload identity"},
		{map[string]string{"AZURE_TOKEN_CREDENTIALS": "ManagedIdentityCredential"}, `narrowed to "ManagedIdentityCredential"`},
		{map[string]string{}, "azidentity's default chain: environment (AZURE_CLIENT_SECRET), workload identity"},
	} {
		for _, k := range all {
			t.Setenv(k, c.env[k])
			if c.env[k] == "" {
				os.Unsetenv(k)
			}
		}
		got := describeCreds().credentials(store.AuthMissing)
		if !strings.Contains(got.Source, c.want) || got.Set == "" {
			t.Errorf("env %v: source %q (set %q), want %q", c.env, got.Source, got.Set, c.want)
		}
	}
}
