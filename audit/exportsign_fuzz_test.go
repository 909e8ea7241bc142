package audit_test

import (
	"strings"
	"testing"

	"github.com/quarantine-console/quarantine/audit"
)

// FuzzVerifyExportCSV: whatever a file holds, VerifyExportCSV answers with
// a result (a problem, or none), never a panic, and an error only when
// reading fails (a strings.Reader never does).
func FuzzVerifyExportCSV(f *testing.F) {
	header := "seq,at,actor_issuer,actor_subject,actor_email,actor_email_verified,tenant,action,object_type,object_id,message_id,operation_id,request_id,reason,outcome,before,after,remote_addr,user_agent,prev_hash,hash,nonce\n"
	empty := strings.Repeat(",", 21)
	for _, seed := range []string{
		"",
		header,
		header + "# chain-head,0" + strings.Repeat(",", 7) + "filter:" + strings.Repeat(",", 13) + "\n",
		header + "1" + strings.Repeat(",", 18) + "," + strings.Repeat("ab", 32) + ",\n",
		header + "# export-signature first_seq=0 last_seq=0 entries=0 left_out=0 unproven_stub=7 exported_at=x sha256=00 key_id=k signature=zz" + empty + "\n",
		header + "\"unterminated\n",
		header + "1,2,3\n",
	} {
		f.Add(seed)
	}
	keys := audit.NewKeySet()
	f.Fuzz(func(t *testing.T, file string) {
		res, err := audit.VerifyExportCSV(strings.NewReader(file), keys)
		if err != nil {
			t.Fatalf("an error reading a string: %v", err)
		}
		if res.OK() && file == "" {
			t.Fatalf("an empty file verified: %s", res)
		}
	})
}
