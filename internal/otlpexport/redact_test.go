package otlpexport_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gpuwatt/gpuwatt/internal/otlpexport"
)

// TestSecretsRedacted: a password in the --otlp URL never reaches a message (serve logged
// it with the endpoint); a port beyond 65535 is refused (it was accepted).
func TestSecretsRedacted(t *testing.T) {
	for _, u := range []string{"http://alice:s3cret@collector:99999", "http://alice:s3cret@collector:4318/?q=1", "ftp://alice:s3cret@collector:4318"} {
		_, err := otlpexport.ParseURL(u)
		if err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: %v", u, err)
		}
	}
	if _, err := otlpexport.ParseURL("http://c:99999"); err == nil || !strings.Contains(err.Error(), "port 99999") {
		t.Errorf("port 99999: %v", err)
	}
	e, err := otlpexport.New(context.Background(), otlpexport.Options{URL: "http://alice:s3cret@127.0.0.1:4318"}, func() []otlpexport.GPU { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if ep := e.Endpoint(); strings.Contains(ep, "s3cret") || !strings.Contains(ep, "alice:xxxxx@127.0.0.1:4318") {
		t.Errorf("Endpoint() = %s", ep)
	}
	if got := otlpexport.Redact("http://a:b@c d"); strings.Contains(got, ":b@") {
		t.Errorf("Redact of a URL that does not parse: %s", got)
	}
}
