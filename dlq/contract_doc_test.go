package dlq

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestHeaderContractDocNamesTheContract pins the Headers table of
// docs/header-contract.md to the headers the parser reads: every header
// the table names is one ParseDLQ reads (spelled as it reads it), and every
// header it reads is in the table. Error classes likewise. (review rev-docs)
func TestHeaderContractDocNamesTheContract(t *testing.T) {
	doc, err := os.ReadFile("../docs/header-contract.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "\n## Headers\n")
	if !ok {
		t.Fatal("docs/header-contract.md has no Headers section")
	}
	table, _, _ := strings.Cut(rest, "\n\n**")
	name := regexp.MustCompile("`((?:Upstream-)?Dlq-[A-Za-z-]+)`")
	documented := map[string]bool{}
	for _, line := range strings.Split(table, "\n") {
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " | ")
		for _, m := range name.FindAllStringSubmatch(first, -1) {
			documented[m[1]] = true
		}
	}
	read := []string{HeaderReplayOf, UpstreamPrefix + HeaderReplayOf}
	for h := range contractFields {
		if h != HeaderNatsMsgID {
			read = append(read, h)
		}
	}
	for _, h := range read {
		if !documented[h] {
			t.Errorf("the parser reads %s; the Headers table of docs/header-contract.md does not name it", h)
		}
	}
	for h := range documented {
		if !slices.Contains(read, h) {
			t.Errorf("docs/header-contract.md names %s; the parser reads no header so spelled", h)
		}
	}
	for _, c := range ProducerClasses {
		if !strings.Contains(table, "`"+string(c)+"`") {
			t.Errorf("Dlq-Error-Class accepts %s; the Headers table does not list it", c)
		}
	}
}
