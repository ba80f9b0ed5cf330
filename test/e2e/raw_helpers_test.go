package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"testing"
)

// rawPost writes a POST over its own TLS connection while reading the
// answer, so a server that answers early (413) and stops reading is seen
// as it answered, not as a broken pipe. chunked sends no Content-Length.
func (s *server) rawPost(t testing.TB, p string, body []byte, chunked bool) reply {
	t.Helper()
	conn := s.dialRaw(t)
	defer conn.Close()
	go writeRawPost(conn, p, body, chunked)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		s.settle()
		t.Fatalf("POST %s (%d bytes, chunked %v): no HTTP response: %v%s", p, len(body), chunked, err, serverState())
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: data}
}

func writeRawPost(w io.Writer, p string, body []byte, chunked bool) {
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n", p)
	if chunked {
		head += "Transfer-Encoding: chunked\r\n\r\n"
	} else {
		head += fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body))
	}
	if _, err := io.WriteString(w, head); err != nil {
		return
	}
	if !chunked {
		_, _ = w.Write(body)
		return
	}
	const chunk = 64 << 10
	for off := 0; off < len(body); off += chunk {
		end := off + chunk
		if end > len(body) {
			end = len(body)
		}
		if _, err := fmt.Fprintf(w, "%x\r\n%s\r\n", end-off, body[off:end]); err != nil {
			return
		}
	}
	_, _ = io.WriteString(w, "0\r\n\r\n")
}
