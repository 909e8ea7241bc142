package dlq

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sameHeadersJSON fails unless appendHeadersJSON writes hs as valid JSON
// that decodes to what encoding/json's document for hs decodes to.
func sameHeadersJSON(t *testing.T, hs []HeaderValue) {
	t.Helper()
	ours := appendHeadersJSON(nil, hs)
	theirs, err := json.Marshal(hs)
	require.NoError(t, err)
	require.True(t, json.Valid(ours), "%q", ours)
	var a, b any
	require.NoError(t, json.Unmarshal(ours, &a))
	require.NoError(t, json.Unmarshal(theirs, &b))
	assert.Equal(t, b, a, "%q", ours)
}

func TestAppendHeadersJSON(t *testing.T) {
	t.Parallel()
	for name, hs := range map[string][]HeaderValue{
		"Nil":      nil,
		"Empty":    {},
		"Plain":    {{Name: "Dlq-Error", Value: "order 7 failed: gateway 502"}, {Name: "X", Value: ""}},
		"Encoded":  {{Name: "AA==", NameEncoding: "base64", Value: "/w==", Encoding: "base64"}},
		"Escapes":  {{Name: `q"b\s`, Value: "a\nb\rc\td\x00e\x01\x1f\x7f <&> \u2028\u2029"}},
		"Unicode":  {{Name: "É", Value: "日本語 🙂"}},
		"Invalid":  {{Name: "bad\xff", Value: "\xc3\x28 \xe2\x82 ok \xf0\x9f\x99"}},
		"Repeated": {{Name: "A", Value: "1"}, {Name: "A", Value: "2"}},
	} {
		t.Run(name, func(t *testing.T) { sameHeadersJSON(t, hs) })
	}
	assert.Equal(t, "null", string(appendHeadersJSON(nil, nil)))
	assert.Equal(t, `[{"name":"A","value":"\"\\\n\u0001"}]`, string(appendHeadersJSON(nil, []HeaderValue{{Name: "A", Value: "\"\\\n\x01"}})))
}

func FuzzAppendHeadersJSON(f *testing.F) {
	f.Add("Dlq-Error", "", "boom\n\"x\"", "")
	f.Add("\xff", "base64", "\x00\u2028", "base64")
	f.Fuzz(func(t *testing.T, name, nameEnc, value, enc string) {
		sameHeadersJSON(t, []HeaderValue{{Name: name, NameEncoding: nameEnc, Value: value, Encoding: enc}})
	})
}
