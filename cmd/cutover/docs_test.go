package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestAPIDocExamples runs the curl examples of docs/api.md, in order,
// against a running system (the same wiring as `cutover dev`), and checks
// each answers the status its "# NNN" comment promises. Examples with
// placeholders ("...") or file uploads are skipped.
func TestAPIDocExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the system")
	}
	s := startSystem(t)
	f, err := os.Open("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// The doc's shell variables, and the secret the doc tells the reader
	// to export (the test system's).
	vars := map[string]string{"$API": s.api, "$CUTOVER_SERVICE_SECRET": testServiceSecret}
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	ran := 0
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if strings.HasPrefix(l, "export ") {
			k, v, _ := strings.Cut(strings.TrimPrefix(l, "export "), "=")
			v, _, _ = strings.Cut(v, "   #")
			if k != "API" { // the test's server, not the doc's 127.0.0.1:8080
				v = strings.Trim(strings.TrimSpace(v), "'\"")
				for name, val := range vars {
					v = strings.ReplaceAll(v, name, val)
				}
				vars["$"+k] = v
			}
			continue
		}
		if !strings.HasPrefix(l, "curl ") {
			continue
		}
		cmd := l
		for strings.HasSuffix(cmd, "\\") && i+1 < len(lines) {
			i++
			cmd = strings.TrimSuffix(cmd, "\\") + " " + strings.TrimSpace(lines[i])
		}
		want := 0
		if i+1 < len(lines) {
			if c := strings.TrimSpace(lines[i+1]); strings.HasPrefix(c, "# ") {
				f := strings.Fields(c)
				if len(f) > 1 {
					if f[1] == "HTTP/1.1" && len(f) > 2 {
						want, _ = strconv.Atoi(f[2])
					} else {
						want, _ = strconv.Atoi(strings.TrimSuffix(f[1], ","))
					}
				}
			}
		}
		if strings.Contains(cmd, "...") || strings.Contains(cmd, "@") || strings.Contains(cmd, " -o ") {
			continue
		}
		req := parseCurl(t, cmd, vars)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 500 || (want != 0 && resp.StatusCode != want) {
			t.Errorf("%s\n  got %d %s, doc says %d", cmd, resp.StatusCode, body, want)
		}
		ran++
	}
	if ran < 12 {
		t.Fatalf("only %d examples ran", ran)
	}
}

// parseCurl turns the doc's curl subset (-s -i -H -X -d) into a request,
// with curl's default Content-Type for a body.
func parseCurl(t *testing.T, cmd string, vars map[string]string) *http.Request {
	t.Helper()
	var args []string
	for cur, q := "", rune(0); ; {
		// tokenise with ' and " quoting
		if cmd == "" {
			if cur != "" {
				args = append(args, cur)
			}
			break
		}
		c := rune(cmd[0])
		cmd = cmd[1:]
		switch {
		case q != 0 && c == q:
			q = 0
		case q == 0 && (c == '\'' || c == '"'):
			q = c
		case q == 0 && c == ' ':
			if cur != "" {
				args = append(args, cur)
				cur = ""
			}
		default:
			cur += string(c)
		}
	}
	sub := func(s string) string {
		for k, v := range vars {
			s = strings.ReplaceAll(s, k, v)
		}
		return s
	}
	method, url, body := "", "", ""
	hdr := http.Header{}
	for i := 1; i < len(args); i++ {
		switch args[i] {
		case "-s", "-i":
		case "-H":
			i++
			k, v, _ := strings.Cut(sub(args[i]), ":")
			hdr.Add(strings.TrimSpace(k), strings.TrimSpace(v))
		case "-X":
			i++
			method = args[i]
		case "-d", "--data-binary":
			i++
			body = args[i]
		default:
			url = sub(args[i])
		}
	}
	if method == "" {
		method = "GET"
		if body != "" {
			method = "POST"
		}
	}
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	req.Header = hdr
	if body != "" && hdr.Get("Content-Type") == "" {
		// What curl sends with -d or --data-binary unless told otherwise.
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	return req
}
