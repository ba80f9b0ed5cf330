package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 13, over the wire: any uid is echoed exactly (long ones, and one
// holding a NUL, which the apiserver compares byte for byte); review bodies
// and profiles files are strict JSON (RFC 8259), raw control characters
// refused with a one-line reason; and the version is the same everywhere.

// TestAnyUIDIsEchoedExactly: uids of 80 bytes and more used to get 400, and
// a \u0000 cut the echoed uid short; the apiserver rejects an answer whose
// uid differs from its request's (checkEnvelope compares the decoded
// strings, as it does).
func TestAnyUIDIsEchoedExactly(t *testing.T) {
	t.Parallel()
	uids := map[string]string{
		"36 bytes (a UUID)":       newUID(),
		"79 bytes":                strings.Repeat("u", 79),
		"80 bytes":                strings.Repeat("u", 80),
		"4096 bytes":              strings.Repeat("0123456789abcdef", 256),
		"64 KiB":                  strings.Repeat("x", 64<<10),
		"NUL inside":              "0d3a6f1e\x008c4b",
		"NUL first":               "\x00abc",
		"only NUL":                "\x00",
		"quotes and backslashes":  `a"b\c/d`,
		"control characters":      "tab\tnl\nbell\x07",
		"non-ASCII":               "\u00e9\u20ac\U0001F600",
		"U+2028 line separator":   "a\u2028b",
		"HTML-escaped characters": "<&>",
	}
	for name, uid := range uids {
		name, uid := name, uid
		t.Run(name, func(t *testing.T) {
			run := srv.currentRun()
			mutated := podCreate("kubeflow", trainingPod(8))
			mutated.uid = uid
			if rr := srv.review(t, mutated); rr.patch == nil { // checkEnvelope: the uid is the same
				t.Errorf("the training pod got no patch")
			}
			untouched := podCreate("kubeflow", trainingPod(8))
			untouched.operation, untouched.uid = "UPDATE", uid
			srv.review(t, untouched)
			checkSameRunServing(t, run)
		})
	}
}

// withRawByte is the good review with the bytes raw put, unescaped, where
// the placeholder string "@@RAW@@" (quotes included) stood.
func withRawByte(raw string) []byte {
	doc := reviewEdited(func(r obj) {
		pod := r["request"].(obj)["object"].(obj)
		pod["metadata"].(obj)["labels"].(obj)["e2e/raw"] = "@@RAW@@"
	})
	return bytes.Replace(doc, []byte(`"@@RAW@@"`), []byte(raw), 1)
}

// TestRawControlCharactersAre400: U+0000..U+001F raw inside a string, or
// between tokens other than space, tab, CR and LF, is not JSON (RFC 8259);
// cJSON took them. Each gets 400 with a reason naming the character and
// its byte, and the server goes on serving.
func TestRawControlCharactersAre400(t *testing.T) {
	t.Parallel()
	for c := 0; c < 0x20; c++ {
		c := c
		for _, where := range []string{"in a string", "between tokens"} {
			where := where
			ws := c == '\t' || c == '\n' || c == '\r'
			t.Run(fmt.Sprintf("U+%04X %s", c, where), func(t *testing.T) {
				run := srv.currentRun()
				raw := fmt.Sprintf("\"a%cb\"", c)
				if where == "between tokens" {
					raw = fmt.Sprintf("%c\"ab\"", c)
				}
				body := withRawByte(raw)
				rep := srv.post(t, "/mutate", "application/json", body)
				switch {
				case ws && where == "between tokens":
					if rep.status != 200 {
						t.Fatalf("whitespace U+%04X between tokens: expected 200, got %d %q", c, rep.status, cut(rep.body))
					}
				case rep.status != 400:
					t.Fatalf("expected 400, got %d %q", rep.status, cut(rep.body))
				default:
					checkReason(t, rep, fmt.Sprintf("control character U+%04X at byte %d", c, bytes.IndexByte(body, byte(c))))
				}
				checkSameRunServing(t, run)
			})
		}
	}
}

// TestNonRFCJSONIs400: what else cJSON read that RFC 8259 (and the
// apiserver's decoder) does not: numbers with a leading zero or a bare
// dot, a byte order mark, a lone surrogate escape in the uid.
func TestNonRFCJSONIs400(t *testing.T) {
	t.Parallel()
	good := goodReviewBody()
	cases := map[string][]byte{
		"leading zero":              withRawByte("01"),
		"bare dot":                  withRawByte("1."),
		"byte order mark":           append([]byte("\xef\xbb\xbf"), good...),
		"vertical tab":              append(append([]byte{}, good...), '\v'),
		"lone surrogate in the uid": bytes.Replace(good, []byte(`"uid":"`), []byte(`"uid":"\udc00`), 1),
	}
	for name, body := range cases {
		name, body := name, body
		t.Run(name, func(t *testing.T) {
			expectNotJSON(t, body)
		})
	}
}

// TestCheckProfilesStrictJSON: profiles text with a raw control character,
// invalid UTF-8, a \u0000 (which cJSON would have cut the value at) or text
// after the document is refused, with the byte.
func TestCheckProfilesStrictJSON(t *testing.T) {
	t.Parallel()
	shipped, err := os.ReadFile(profilesPath)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(shipped, []byte(`"eth0"`))
	if at < 0 {
		t.Fatalf("%s has no \"eth0\" to spoil", profilesPath)
	}
	spoil := func(with string) []byte {
		return append(append(append([]byte{}, shipped[:at]...), with...), shipped[at+len(`"eth0"`):]...)
	}
	cases := map[string]struct {
		text  []byte
		words []string
	}{
		"raw tab in a value":  {spoil("\"eth\t0\""), []string{"control character U+0009", fmt.Sprintf("byte %d", at+4)}},
		"raw ESC in a value":  {spoil("\"eth\x1b0\""), []string{"control character U+001B"}},
		"form feed before":    {spoil("\f\"eth0\""), []string{"control character U+000C"}},
		"invalid UTF-8":       {spoil("\"eth\xff0\""), []string{"UTF-8", fmt.Sprintf("byte %d", at+4)}},
		"escaped NUL":         {spoil(`"eth0\u0000x"`), []string{`\u0000`, fmt.Sprintf("byte %d", at+5)}},
		"text after the file": {append(append([]byte{}, shipped...), "x"...), []string{"more text after"}},
	}
	dir := t.TempDir()
	for name, c := range cases {
		name, c := name, c
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
			if err := os.WriteFile(file, c.text, 0o600); err != nil {
				t.Fatal(err)
			}
			res := runBinary(t, nil, "check-profiles", file)
			msg := string(res.stdout) + string(res.stderr)
			if res.exitCode == 0 {
				t.Fatalf("expected a non-zero exit, got 0: %q", msg)
			}
			for _, w := range c.words {
				if !strings.Contains(msg, w) {
					t.Errorf("expected the message to contain %q, got %q", w, msg)
				}
			}
		})
	}
}
