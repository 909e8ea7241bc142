package replaypolicy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSendableHeaderName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"X-A": true, "Nats-Msg-Id": true, "!#$%&'*+-.^_`|~09AZaz": true,
		"": false, "a b": false, "a\tb": false, "a:b": false, "a/b": false, "k=v": false, "x@y": false, `"q"`: false,
		"(a)": false, "a,b": false, "a;b": false, "<a>": false, "a?": false, "[a]": false, `a\b`: false, "{a}": false,
		"Ü": false, "a\x7f": false, "a\x00": false, "a\r\n": false,
	} {
		assert.Equal(t, want, SendableHeaderName(name), "%q", name)
	}
}

// TestHeaderNameBytesAreTheSendableOnes: the bytes the replay's query lets
// a name hold are exactly those SendableHeaderName does.
func TestHeaderNameBytesAreTheSendableOnes(t *testing.T) {
	t.Parallel()
	allowed := HeaderNameBytes()
	for c := range 256 {
		b := string([]byte{byte(c)})
		assert.Equal(t, SendableHeaderName(b), strings.Contains(allowed, b), "byte %#x", c)
	}
	assert.Len(t, allowed, 94-len(headerNameRefused))
}
