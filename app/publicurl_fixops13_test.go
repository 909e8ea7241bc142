package app

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestFixOps13PublicURLOfAndSecure: the public URL's scheme and host are
// stored in lower case; https counts whatever its case, and so does
// TLSTerminated; anything but an origin is only trimmed.
func TestFixOps13PublicURLOfAndSecure(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"HTTPS://Console.Example.COM/": "https://console.example.com",
		"Http://LOCALHOST:8080":        "http://localhost:8080",
		"https://c.example.com":        "https://c.example.com",
		"https://c.example.com/Path":   "https://c.example.com/Path",
		"":                             "",
	} {
		assert.Equal(t, want, PublicURLOf(in), in)
	}
	assert.True(t, Config{PublicURL: "HTTPS://c.example.com"}.Secure())
	assert.True(t, Config{PublicURL: "http://c.example.com", TLSTerminated: true}.Secure())
	assert.False(t, Config{PublicURL: "http://c.example.com"}.Secure())
	assert.False(t, Config{PublicURL: "httpsx://c.example.com"}.Secure())
}
