package web_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/quarantine-console/quarantine/testfactory"
)

// TestStaticFilesAnswerHEAD: the static files answer HEAD as they answer
// GET, without the body.
func TestStaticFilesAnswerHEAD(t *testing.T) {
	t.Parallel()
	b := testfactory.StartConsole(t, testfactory.ConsoleOptions{})
	get := b.Do(t, http.DefaultClient, "GET", "/static/app.css", nil, nil)
	head := b.Do(t, http.DefaultClient, "HEAD", "/static/app.css", nil, nil)
	assert.Equal(t, http.StatusOK, head.Status)
	assert.Empty(t, head.Body)
	assert.Equal(t, get.Header.Get("Content-Type"), head.Header.Get("Content-Type"))
	assert.Equal(t, get.Header.Get("ETag"), head.Header.Get("ETag"))
	assert.Equal(t, http.StatusNotFound, b.Do(t, http.DefaultClient, "HEAD", "/static/nothing.css", nil, nil).Status)
}
