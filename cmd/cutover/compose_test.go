package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cutover/cutover/internal/metrics"
	"github.com/cutover/cutover/internal/pgserver/pgtest"
	"github.com/cutover/cutover/internal/system"
	"github.com/cutover/cutover/services/contract"
	"github.com/cutover/cutover/services/participant"
	"github.com/cutover/cutover/services/pgstore"

	"github.com/cutover/cutover/app/chat"
	"github.com/cutover/cutover/services/store"
)

// deploy/ is checked here because Docker cannot run where the tests do:
// the compose file is parsed (a YAML subset, below: the module has no
// YAML parser it may import) and every cutover command in it must parse
// with --check-config.

const deployDir = "../../deploy"

// repoRoot holds docker-compose.yml (its bind mounts are relative to it).
const repoRoot = "../.."

// --- a YAML subset: block mappings, "- scalar" lists, JSON flow lists ---

type yline struct {
	n      int // line number
	indent int
	text   string
}

// parseYAMLSubset parses the subset of YAML the deploy files use: nested
// block mappings ("key: value" / "key:" + indented block), block lists of
// scalars ("- value"), flow lists written as JSON (["a", "b"]), plain or
// double-quoted scalars, comments, and empty values (null). Anything else
// (anchors, multi-line strings, maps in lists) is an error, so the files
// stay in the subset.
func parseYAMLSubset(src string) (map[string]any, error) {
	var lines []yline
	for i, raw := range strings.Split(src, "\n") {
		if strings.Contains(raw, "\t") {
			return nil, fmt.Errorf("line %d: tab", i+1)
		}
		t := stripComment(raw)
		if strings.TrimSpace(t) == "" {
			continue
		}
		ind := len(t) - len(strings.TrimLeft(t, " "))
		lines = append(lines, yline{i + 1, ind, strings.TrimSpace(t)})
	}
	p := &yparser{lines: lines}
	v, err := p.block(0)
	if err != nil {
		return nil, err
	}
	if p.i < len(p.lines) {
		return nil, fmt.Errorf("line %d: unexpected indentation", p.lines[p.i].n)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("top level is not a mapping")
	}
	return m, nil
}

// stripComment removes a "#" comment outside double quotes.
func stripComment(s string) string {
	in := false
	for i, r := range s {
		switch {
		case r == '"' && (i == 0 || s[i-1] != '\\'):
			in = !in
		case r == '#' && !in && (i == 0 || s[i-1] == ' '):
			return strings.TrimRight(s[:i], " ")
		}
	}
	return strings.TrimRight(s, " ")
}

type yparser struct {
	lines []yline
	i     int
}

func (p *yparser) block(indent int) (any, error) {
	if p.i >= len(p.lines) {
		return nil, nil
	}
	first := p.lines[p.i]
	if first.indent != indent {
		return nil, fmt.Errorf("line %d: indentation %d, want %d", first.n, first.indent, indent)
	}
	if strings.HasPrefix(first.text, "- ") || first.text == "-" {
		var out []any
		for p.i < len(p.lines) && p.lines[p.i].indent == indent && strings.HasPrefix(p.lines[p.i].text, "-") {
			l := p.lines[p.i]
			item := strings.TrimSpace(strings.TrimPrefix(l.text, "-"))
			if k, _, isMap := splitKey(item); isMap && k != "" && !strings.HasPrefix(item, "\"") {
				return nil, fmt.Errorf("line %d: mappings in lists are outside the subset", l.n)
			}
			v, err := scalar(item, l.n)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
			p.i++
		}
		return out, nil
	}
	out := map[string]any{}
	for p.i < len(p.lines) && p.lines[p.i].indent == indent {
		l := p.lines[p.i]
		k, rest, ok := splitKey(l.text)
		if !ok {
			return nil, fmt.Errorf("line %d: want key: value, got %q", l.n, l.text)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("line %d: duplicate key %q", l.n, k)
		}
		p.i++
		if rest != "" {
			v, err := scalar(rest, l.n)
			if err != nil {
				return nil, err
			}
			out[k] = v
			continue
		}
		if p.i < len(p.lines) && p.lines[p.i].indent > indent {
			v, err := p.block(p.lines[p.i].indent)
			if err != nil {
				return nil, err
			}
			out[k] = v
		} else {
			out[k] = nil
		}
	}
	return out, nil
}

// splitKey splits "key: rest" (or "key:"); keys are plain.
func splitKey(s string) (key, rest string, ok bool) {
	i := strings.Index(s, ":")
	for i >= 0 && i+1 < len(s) && s[i+1] != ' ' {
		j := strings.Index(s[i+1:], ":")
		if j < 0 {
			return "", "", false
		}
		i += 1 + j
	}
	if i <= 0 {
		return "", "", false
	}
	key = s[:i]
	if strings.ContainsAny(key, " \"[{&*") {
		return "", "", false
	}
	return key, strings.TrimSpace(s[i+1:]), true
}

func scalar(s string, n int) (any, error) {
	switch {
	case strings.HasPrefix(s, "["):
		var v []any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			return nil, fmt.Errorf("line %d: flow list must be JSON: %w", n, err)
		}
		return v, nil
	case strings.HasPrefix(s, "\""):
		var v string
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			return nil, fmt.Errorf("line %d: quoted string: %w", n, err)
		}
		return v, nil
	case strings.HasPrefix(s, "{") || strings.HasPrefix(s, "&") || strings.HasPrefix(s, "*") || strings.HasPrefix(s, "|") || strings.HasPrefix(s, ">") || strings.HasPrefix(s, "'"):
		return nil, fmt.Errorf("line %d: %q is outside the YAML subset", n, s)
	}
	return s, nil
}

func TestYAMLSubset(t *testing.T) {
	m, err := parseYAMLSubset("a:\n  b: \"x # y\" # c\n  l:\n    - one\n    - two:three\n  f: [\"p\", \"q\"]\n  e:\nz: 1\n")
	if err != nil {
		t.Fatal(err)
	}
	a := m["a"].(map[string]any)
	if a["b"] != "x # y" || !slices.Equal(a["l"].([]any), []any{"one", "two:three"}) || len(a["f"].([]any)) != 2 || a["e"] != nil || m["z"] != "1" {
		t.Fatalf("%#v", m)
	}
	for _, bad := range []string{"a: &x 1\n", "a:\n  - b: c\n", "a: 1\na: 2\n", "a:\n  b: 1\n c: 2\n", "a: [x]\n"} {
		if _, err := parseYAMLSubset(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// --- the compose file ---

func strList(t *testing.T, where string, v any) []string {
	t.Helper()
	l, ok := v.([]any)
	if !ok {
		t.Fatalf("%s: want a list, got %T", where, v)
	}
	out := make([]string, len(l))
	for i, x := range l {
		s, ok := x.(string)
		if !ok {
			t.Fatalf("%s[%d]: want a string, got %T", where, i, x)
		}
		out[i] = s
	}
	return out
}

// flagValue returns the value of --name in args ("--name v" or "--name=v").
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		if a == "--"+name && i+1 < len(args) {
			return args[i+1], true
		}
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

func portOf(t *testing.T, where, hostport string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(hostport)
	if err != nil {
		t.Fatalf("%s: %q: %v", where, hostport, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil || n <= 0 || n > 65535 {
		t.Fatalf("%s: port %q", where, p)
	}
	return n
}

func urlPort(t *testing.T, where, raw string) int {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("%s: %q: %v", where, raw, err)
	}
	return portOf(t, where, u.Host)
}

// TestComposeFile checks docker-compose.yml (at the repository root): every cutover command
// and health check parses (--check-config), listen ports are distinct
// (the services share the host network), every --nats/--routes/--api URL
// and health URL points at a port some service listens on with the right
// role, every named volume is declared (and used), every depends_on names
// a service; and the Dockerfile builds a static binary run as non-root.
func TestComposeFile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := parseYAMLSubset(string(b))
	if err != nil {
		t.Fatal(err)
	}
	services, ok := doc["services"].(map[string]any)
	if !ok || len(services) == 0 {
		t.Fatal("no services")
	}
	declared := map[string]bool{}
	if vs, ok := doc["volumes"].(map[string]any); ok {
		for k := range vs {
			declared[k] = true
		}
	}
	usedVolumes := map[string]bool{}
	listen := map[int]string{} // port → "service:kind"
	claim := func(svc, kind string, port int) {
		if prev, dup := listen[port]; dup {
			t.Errorf("port %d: %s and %s:%s", port, prev, svc, kind)
		}
		listen[port] = svc + ":" + kind
	}
	type ref struct {
		svc, kind, what string
		port            int
	}
	var refs []ref
	roles := map[string]int{}
	oneShots := map[string]string{}
	// What `cutover certs` writes, to check the files the services name.
	certsDir := t.TempDir()
	if code, _, errs := run(t, "certs", "--dir", certsDir, "--regions", "us-east,eu-west"); code != 0 {
		t.Fatalf("cutover certs: %s", errs)
	}
	names := make([]string, 0, len(services))
	for n := range services {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		svc, ok := services[name].(map[string]any)
		if !ok {
			t.Errorf("%s: not a mapping", name)
			continue
		}
		image, _ := svc["image"].(string)
		if svc["network_mode"] != "host" {
			t.Errorf("%s: network_mode must be host (the embedded NATS listens on loopback only)", name)
		}
		if _, ok := svc["ports"]; ok {
			t.Errorf("%s: published ports are meaningless on the host network", name)
		}
		for _, d := range dependsOn(t, name, svc["depends_on"]) {
			if _, ok := services[d]; !ok || d == name {
				t.Errorf("%s: depends_on %q: no such service", name, d)
			}
		}
		for _, v := range strListOpt(t, name+".volumes", svc["volumes"]) {
			src, _, _ := strings.Cut(v, ":")
			if strings.HasPrefix(src, ".") || strings.HasPrefix(src, "/") {
				if _, err := os.Stat(filepath.Join(repoRoot, src)); err != nil {
					t.Errorf("%s: bind mount %q: %v", name, src, err)
				}
				continue
			}
			usedVolumes[src] = true
			if !declared[src] {
				t.Errorf("%s: volume %q is not declared", name, src)
			}
		}
		cmd := strList(t, name+".command", svc["command"])
		if !strings.HasPrefix(image, "cutover:") {
			if la, ok := flagValue(cmd, "web.listen-address"); ok {
				claim(name, "prometheus", portOf(t, name, la))
			}
			continue
		}
		if u, _ := svc["user"].(string); u == "" || strings.HasPrefix(u, "0") || u == "root" {
			t.Errorf("%s: runs as root (user %q)", name, u)
		}
		if len(cmd) == 0 {
			t.Errorf("%s: empty command", name)
			continue
		}
		role := cmd[0]
		roles[role]++
		var out, errs bytes.Buffer
		if code := Run(context.Background(), append(slices.Clone(cmd), "--check-config"), &out, &errs); code != 0 || !strings.Contains(out.String(), "configuration OK") {
			t.Errorf("%s: `cutover %s --check-config` exit %d: %s%s", name, strings.Join(cmd, " "), code, out.String(), errs.String())
		}
		secured(t, name, cmd, svc, certsDir)
		if role == "certs" || role == "provision" {
			oneShots[role] = name
			continue // one-shot: no health check, no listener
		}
		switch role {
		case "nats":
			p, _ := flagValue(cmd, "port")
			cp, _ := flagValue(cmd, "cluster-port")
			claim(name, "nats", portOf(t, name, "127.0.0.1:"+p))
			claim(name, "route", portOf(t, name, "127.0.0.1:"+cp))
			rs, _ := flagValue(cmd, "routes")
			for _, r := range splitList(rs) {
				refs = append(refs, ref{name, "route", "--routes", urlPort(t, name, r)})
			}
		case "gateway", "projector":
			h, ok := flagValue(cmd, "http")
			if !ok {
				t.Errorf("%s: no --http", name)
			}
			claim(name, role+"-http", portOf(t, name, h))
		}
		if n, ok := flagValue(cmd, "nats"); ok {
			for _, u := range splitList(n) {
				refs = append(refs, ref{name, "nats", "--nats", urlPort(t, name, u)})
			}
		} else if role != "nats" {
			t.Errorf("%s: no --nats (the default is a single local server)", name)
		}
		if a, ok := flagValue(cmd, "api"); ok {
			refs = append(refs, ref{name, "gateway-http", "--api", urlPort(t, name, a)})
		}
		hc, ok := svc["healthcheck"].(map[string]any)
		if !ok {
			t.Errorf("%s: no healthcheck", name)
			continue
		}
		test := strList(t, name+".healthcheck.test", hc["test"])
		if len(test) < 3 || test[0] != "CMD" || !strings.HasSuffix(test[1], "/cutover") {
			t.Errorf("%s: healthcheck %v is not [CMD, .../cutover, ...] (the image has no shell)", name, test)
			continue
		}
		var hout, herrs bytes.Buffer
		if code := Run(context.Background(), append(slices.Clone(test[2:]), "--check-config"), &hout, &herrs); code != 0 {
			t.Errorf("%s: healthcheck %v: exit %d: %s", name, test[2:], code, herrs.String())
		}
		if _, ok := flagValue(test, "nats"); ok {
			secured(t, name+" healthcheck", append([]string{"health"}, test[3:]...), svc, certsDir)
		}
		if h, ok := flagValue(test, "http"); ok {
			refs = append(refs, ref{name, "", "healthcheck", urlPort(t, name, h)})
		}
		if n, ok := flagValue(test, "nats"); ok {
			for _, u := range splitList(n) {
				refs = append(refs, ref{name, "nats", "healthcheck", urlPort(t, name, u)})
			}
		}
	}
	for _, r := range refs {
		got, ok := listen[r.port]
		_, kind, _ := strings.Cut(got, ":")
		if !ok || (r.kind != "" && kind != r.kind) {
			want := r.kind
			if want == "" {
				want = "listening"
			}
			t.Errorf("%s: %s port %d is %q, want a %s port", r.svc, r.what, r.port, got, want)
		}
	}
	for v := range declared {
		if !usedVolumes[v] {
			t.Errorf("volume %q declared but unused", v)
		}
	}
	if roles["nats"] != 3 || roles["orchestrator"] < 2 || roles["gateway"] != 1 || roles["projector"] != 1 || roles["certs"] != 1 || roles["provision"] != 1 {
		t.Errorf("topology %v: want certs, 3 nats, provision, >= 2 orchestrators, a gateway and a projector (as make cluster-test)", roles)
	}
	// Order: the nats nodes start once the certificates exist, the roles
	// once the admin has provisioned the streams (transitively).
	for _, name := range names {
		svc := services[name].(map[string]any)
		cmd, _ := svc["command"].([]any)
		if len(cmd) == 0 || !strings.HasPrefix(fmt.Sprint(svc["image"]), "cutover:") {
			continue
		}
		var want string
		switch cmd[0] {
		case "nats":
			want = oneShots["certs"]
		case "gateway", "orchestrator", "projector", "service":
			want = oneShots["provision"]
		default:
			continue
		}
		if !dependsOnTransitively(t, services, name, want) {
			t.Errorf("%s does not depend on %s", name, want)
		}
	}

	// Prometheus scrapes what the services serve.
	pb, err := os.ReadFile(filepath.Join(deployDir, "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`127\.0\.0\.1:(\d+)`).FindAllStringSubmatch(string(pb), -1) {
		p, _ := strconv.Atoi(m[1])
		if k := listen[p]; !strings.HasSuffix(k, "-http") {
			t.Errorf("prometheus.yml scrapes %s, which is %q", m[0], k)
		}
	}

	df, err := os.ReadFile(filepath.Join(deployDir, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(df), "CGO_ENABLED=0") {
		t.Error("Dockerfile: the binary is not built static (CGO_ENABLED=0)")
	}
	users := regexp.MustCompile(`(?m)^USER\s+(\S+)`).FindAllStringSubmatch(string(df), -1)
	if len(users) == 0 || strings.HasPrefix(users[len(users)-1][1], "0") || users[len(users)-1][1] == "root" {
		t.Errorf("Dockerfile: the final image does not run as a non-root USER: %v", users)
	}
}

// dependsOn is a service's depends_on: a list of names, or a mapping of
// names to {condition: ...}.
func dependsOn(t *testing.T, name string, v any) []string {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		return strListOpt(t, name+".depends_on", v)
	}
	var out []string
	for d, c := range m {
		cm, ok := c.(map[string]any)
		cond, _ := cm["condition"].(string)
		if !ok || !slices.Contains([]string{"service_started", "service_healthy", "service_completed_successfully"}, cond) {
			t.Errorf("%s: depends_on %s: condition %v", name, d, c)
		}
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

func dependsOnTransitively(t *testing.T, services map[string]any, from, to string) bool {
	seen := map[string]bool{}
	var walk func(string) bool
	walk = func(n string) bool {
		if seen[n] {
			return false
		}
		seen[n] = true
		svc, _ := services[n].(map[string]any)
		for _, d := range dependsOn(t, n, svc["depends_on"]) {
			if d == to || walk(d) {
				return true
			}
		}
		return false
	}
	return walk(from)
}

// secured checks one cutover service of the compose file against the
// secured deployment: the nats nodes take the users file and TLS (routes
// too), every other role connects as its own user with the CA and no
// secret on its command line, no role runs --insecure-dev-auth, the
// gateway and projector take signed tokens, and every file a flag names
// lies in a volume the service mounts and is one `cutover certs` writes.
func secured(t *testing.T, name string, cmd []string, svc map[string]any, certsDir string) {
	t.Helper()
	if slices.Contains(cmd, "--insecure-dev-auth") {
		t.Errorf("%s runs --insecure-dev-auth", name)
	}
	for _, secret := range []string{"--nats-password", "--auth-secret", "--service-secret", "--secret", "--contract-secret", "--contract-key"} {
		if slices.Contains(cmd, secret) {
			t.Errorf("%s has a secret on its command line (%s)", name, secret)
		}
	}
	want := map[string][]string{
		"nats":         {"users", "tls-cert", "tls-key", "tls-ca", "route-tls"},
		"provision":    {"nats-user", "nats-password-file", "nats-ca"},
		"gateway":      {"nats-user", "nats-password-file", "nats-ca", "auth-secret-file", "service-secret-file", "contract-secret-file"},
		"projector":    {"nats-user", "nats-password-file", "nats-ca", "auth-secret-file", "service-secret-file"},
		"orchestrator": {"nats-user", "nats-password-file", "nats-ca", "service-secret-file", "contract-secret-file", "operators-file"},
		"service":      {"nats-user", "nats-password-file", "nats-ca", "contract-key-file"},
		"health":       {"nats-user", "nats-password-file", "nats-ca"},
	}[cmd[0]]
	for _, f := range want {
		if !slices.Contains(cmd, "--"+f) {
			t.Errorf("%s (%s) lacks --%s", name, cmd[0], f)
		}
	}
	mounts := map[string]bool{}
	for _, v := range strListOpt(t, name+".volumes", svc["volumes"]) {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 {
			mounts[parts[1]] = true
		}
	}
	for i, a := range cmd {
		if !strings.HasPrefix(a, "--") || i+1 >= len(cmd) || !(strings.HasSuffix(a, "-file") || slices.Contains([]string{"--users", "--tls-cert", "--tls-key", "--tls-ca", "--nats-ca"}, a)) {
			continue
		}
		path := cmd[i+1]
		dir, file := filepath.Split(path)
		if !mounts[strings.TrimSuffix(dir, "/")] {
			t.Errorf("%s: %s %s: no volume mounted at %s", name, a, path, dir)
		}
		if _, err := os.Stat(filepath.Join(certsDir, file)); err != nil {
			t.Errorf("%s: %s %s: `cutover certs` writes no %s", name, a, path, file)
		}
	}
	if u, ok := flagValue(cmd, "nats-user"); ok {
		if _, err := os.Stat(filepath.Join(certsDir, "nats-"+u+".password")); err != nil {
			t.Errorf("%s: --nats-user %s: `cutover certs` writes no such user", name, u)
		}
	}
}

func strListOpt(t *testing.T, where string, v any) []string {
	if v == nil {
		return nil
	}
	return strList(t, where, v)
}

// TestAlertRules: the Prometheus rules use only metric names the binary
// exports (rules are lists of mappings, outside the YAML subset, so the
// names are checked textually).
func TestAlertRules(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(deployDir, "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	known := []string{metrics.MetricPhaseDuration, metrics.MetricWriteLock, metrics.MetricMigrations, metrics.MetricRollbacks, metrics.MetricValidationFails,
		metrics.MetricHTTPResponses, metrics.MetricHTTPRejected, metrics.MetricCacheHits, metrics.MetricCacheMisses, metrics.MetricReadThroughs,
		metrics.MetricMirrorSkips, metrics.MetricClientRejected, metrics.MetricClientRecovered, metrics.MetricClientUnrecov}
	used := regexp.MustCompile(`cutover_[a-z0-9_]+`).FindAllString(string(b), -1)
	if len(used) == 0 {
		t.Fatal("no cutover metric in alerts.yml")
	}
	for _, u := range used {
		base := u
		for _, suf := range []string{"_bucket", "_count", "_sum"} {
			base = strings.TrimSuffix(base, suf)
		}
		if !slices.Contains(known, base) {
			t.Errorf("alerts.yml uses %s, which cmd/cutover/metrics.go does not export", u)
		}
	}
	for _, want := range []string{metrics.MetricWriteLock + "_bucket", metrics.MetricClientUnrecov, "> 25"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("alerts.yml lacks %q", want)
		}
	}
}

// TestCheckConfig: --check-config validates a role's flags without
// starting it (nothing listens, nothing connects, no file is read).
func TestCheckConfig(t *testing.T) {
	dev := "--insecure-dev-auth"
	creds := []string{"--nats-user", "o", "--nats-password-file", "/x/pw", "--nats-ca", "/x/ca.pem"}
	tokens := []string{"--auth-secret-file", "/x/auth", "--service-secret-file", "/x/svc"}
	csecret := []string{"--contract-secret-file", "/x/contract"}
	ckey := []string{"--contract-key-file", "/x/contract-eu-west.key"}
	ops := []string{"--operators-file", "/x/operators.json"}
	with := func(args []string, extra ...[]string) []string {
		out := slices.Clone(args)
		for _, e := range extra {
			out = append(out, e...)
		}
		return out
	}
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"nats", "--port", "4222", "--cluster-name", "c", "--cluster-port", "6222", "--routes", "nats-route://127.0.0.1:6223"}, 0},
		{[]string{"nats", "--routes", "nats-route://127.0.0.1:6223"}, 2},
		{[]string{"nats", "--route-tls", "--cluster-name", "c"}, 2},
		{[]string{"nats", "--tls-cert", "c.pem"}, 2},
		{[]string{"service", "--region", "eu-west", "--nats", "nats://127.0.0.1:1", dev}, 0},
		{with([]string{"service", "--region", "eu-west", "--nats", "nats://127.0.0.1:1"}, creds, ckey), 0},
		{with([]string{"service", "--region", "eu-west", "--nats", "nats://127.0.0.1:1"}, creds), 2}, // no contract key
		{with([]string{"service", "--region", "eu-west", "--contract-key", "ab"}, creds), 2},         // a key on argv
		{[]string{"service", "--region", "eu-west", "--nats", "nats://127.0.0.1:1"}, 2},              // no credentials
		{[]string{"service", "--region", "EU", dev}, 2},
		{[]string{"service", "--region", "eu-west", "--sweep-interval", "-1s", dev}, 2},
		{[]string{"orchestrator", "--workers", "0", dev}, 2},
		{[]string{"orchestrator", "--background-steps", "-1", dev}, 2},
		{[]string{"orchestrator", "--background-steps", "2", dev}, 0},
		{[]string{"orchestrator", "--api", "ftp://x", dev}, 2},
		{[]string{"orchestrator", "--nats-user", "orchestrator"}, 2},                                // no password source
		{[]string{"orchestrator", "--nats-user", "o", "--nats-password", "p", "--nats-ca", "x"}, 2}, // password on argv
		{[]string{"orchestrator", "--nats-cert", "c.pem", dev}, 2},
		{with([]string{"orchestrator"}, creds, csecret, ops), 0},
		{with([]string{"orchestrator"}, creds, ops), 2},                                            // no contract secret
		{with([]string{"orchestrator"}, creds, csecret), 2},                                        // no operator registry
		{with([]string{"orchestrator", "--api", "http://127.0.0.1:8080"}, creds, csecret, ops), 2}, // --api without the service secret
		{with([]string{"orchestrator", "--api", "http://127.0.0.1:8080", "--service-secret-file", "/x/svc"}, creds, csecret, ops), 0},
		{with([]string{"orchestrator", "--api", "http://127.0.0.1:8080", "--service-secret", "s"}, creds, csecret, ops), 2},
		{[]string{"projector", "--http", "nope", dev}, 2},
		{[]string{"projector", "--log-level", "loud", dev}, 2},
		{with([]string{"projector"}, creds), 2}, // no token secret
		{with([]string{"projector"}, creds, tokens), 0},
		{[]string{"gateway", "--regions", "us-east,eu-west", "--http", "127.0.0.1:0", dev}, 0},
		{with([]string{"gateway", "--regions", "us-east,eu-west", "--http", "127.0.0.1:0"}, creds, tokens, csecret), 0},
		{with([]string{"gateway", "--regions", "us-east,eu-west", "--http", "127.0.0.1:0"}, creds, tokens), 2}, // no contract secret
		{with([]string{"gateway", "--http", "127.0.0.1:0", "--auth-secret", "s0123456789abcdef"}, creds, tokens[2:]), 2},
		// A supercluster's roles as separate processes.
		{[]string{"gateway", "--regions", "us-east,eu-west", "--http", "127.0.0.1:0", "--placement", "home=us-east,pages=eu-west", "--region-nats", "eu-west=nats://127.0.0.1:4223", dev}, 0},
		{[]string{"gateway", "--regions", "us-east,eu-west", "--region-nats", "ap-south=nats://127.0.0.1:4223", dev}, 2},
		{[]string{"gateway", "--regions", "us-east,eu-west", "--region-nats", "eu-west", dev}, 2},
		{[]string{"orchestrator", "--placement", "home=us-east", dev}, 0},
		{[]string{"orchestrator", "--placement", "pages=eu-west", dev}, 2},
		{[]string{"orchestrator", "--placement", "home=US East", dev}, 2},
		{[]string{"service", "--region", "eu-west", "--placement", "home=us-east,pages=eu-west,tier=x", dev}, 2},
		{[]string{"projector", "--placement", "home=us-east", dev}, 0},
		{with([]string{"provision", "--regions", "us-east,eu-west"}, creds), 0},
		{[]string{"provision", "--regions", "US"}, 2},
		{[]string{"certs", "--dir", "/x/certs"}, 0},
		{[]string{"certs"}, 2},
		{[]string{"health", "--http", "http://127.0.0.1:1/"}, 0},
		{[]string{"health"}, 2},
	} {
		var out, errs bytes.Buffer
		code := Run(context.Background(), append(slices.Clone(c.args), "--check-config"), &out, &errs)
		if code != c.code {
			t.Errorf("%v: exit %d, want %d: %s%s", c.args, code, c.code, out.String(), errs.String())
		}
	}
}

// TestSecureByDefault: the long-running roles refuse to start without
// real credentials, naming --insecure-dev-auth; with it they start (here:
// --check-config exits 0) and warn. A secret on the command line is
// refused, naming the environment variable and the file flag to use.
func TestSecureByDefault(t *testing.T) {
	for _, role := range [][]string{{"gateway"}, {"service", "--region", "us-east"}, {"orchestrator"}, {"projector"}} {
		var out, errs bytes.Buffer
		code := Run(context.Background(), append(slices.Clone(role), "--check-config"), &out, &errs)
		if code == 0 || !strings.Contains(errs.String(), "--insecure-dev-auth") || strings.Contains(out.String(), "configuration OK") {
			t.Errorf("%s without credentials: exit %d: %s%s", role[0], code, out.String(), errs.String())
		}
		out.Reset()
		errs.Reset()
		code = Run(context.Background(), append(slices.Clone(role), "--insecure-dev-auth", "--check-config"), &out, &errs)
		if code != 0 || !strings.Contains(out.String(), "configuration OK") || !strings.Contains(errs.String(), "WARNING") {
			t.Errorf("%s --insecure-dev-auth: exit %d: %s%s", role[0], code, out.String(), errs.String())
		}
	}
	// The gateway with NATS credentials but no token secret still refuses.
	code, _, errs := run(t, "gateway", "--nats-user", "g", "--nats-password-file", "/x", "--check-config")
	if code == 0 || !strings.Contains(errs, "--insecure-dev-auth") || !strings.Contains(errs, "CUTOVER_AUTH_SECRET") {
		t.Errorf("gateway without a token secret: exit %d: %s", code, errs)
	}
	for _, c := range []struct {
		args []string
		env  string
	}{
		{[]string{"gateway", "--insecure-dev-auth", "--service-secret", "x"}, "CUTOVER_SERVICE_SECRET"},
		{[]string{"gateway", "--insecure-dev-auth", "--auth-secret", "x"}, "CUTOVER_AUTH_SECRET"},
		{[]string{"projector", "--insecure-dev-auth", "--auth-secret", "x"}, "CUTOVER_AUTH_SECRET"},
		{[]string{"orchestrator", "--insecure-dev-auth", "--service-secret", "x"}, "CUTOVER_SERVICE_SECRET"},
		{[]string{"orchestrator", "--insecure-dev-auth", "--contract-secret", "x"}, "CUTOVER_CONTRACT_SECRET"},
		{[]string{"service", "--region", "us-east", "--insecure-dev-auth", "--contract-key", "x"}, "CUTOVER_CONTRACT_KEY"},
		{[]string{"service", "--region", "us-east", "--nats-user", "s", "--nats-password", "x"}, "CUTOVER_NATS_PASSWORD"},
		{[]string{"health", "--nats", "nats://127.0.0.1:1", "--nats-user", "h", "--nats-password", "x"}, "CUTOVER_NATS_PASSWORD"},
		{[]string{"provision", "--nats-user", "admin", "--nats-password", "x"}, "CUTOVER_NATS_PASSWORD"},
		{[]string{"token", "--user", "u", "--secret", "0123456789abcdef0123"}, "CUTOVER_AUTH_SECRET"},
	} {
		args := slices.Clone(c.args)
		if args[0] != "token" {
			args = append(args, "--check-config")
		}
		code, out, errs := run(t, args...)
		if code != 2 || !strings.Contains(errs, "$"+c.env) || !strings.Contains(errs, "-file") || strings.Contains(out, "OK") {
			t.Errorf("%v: exit %d: %s%s; want 2 naming $%s and the file flag", c.args, code, out, errs, c.env)
		}
	}
}

// TestSweepRegions: the service and gateway roles' periodic sweep removes
// expired tombstones from every store of every region, and only those.
func TestSweepRegions(t *testing.T) {
	regions := system.Regions{}
	for _, name := range []string{"us-east", "eu-west"} {
		r, err := chat.OpenRegion(chat.RegionOptions{Name: name, InMemory: true, TombstoneTTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close() })
		regions[name] = r
	}
	stores := 0
	for _, r := range regions {
		for _, p := range r.Participants() {
			sp, ok := p.(interface{ Store() *store.Store })
			if !ok || sp.Store() == nil {
				continue
			}
			stores++
			st := sp.Store()
			for _, id := range []string{"a", "b"} {
				if _, err := st.Put("conv/x", store.Record{ID: id, Kind: "k", Data: []byte("v")}, true); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := st.DeleteAt("conv/x", "a", true, store.Authority{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if stores == 0 {
		t.Fatal("no store behind the participants")
	}
	if n, err := system.SweepRegions(regions, time.Now()); err != nil || n != 0 {
		t.Fatalf("sweep before expiry: %d, %v", n, err)
	}
	if n, err := system.SweepRegions(regions, time.Now().Add(2*time.Hour)); err != nil || n != stores {
		t.Fatalf("sweep after expiry: %d (want %d), %v", n, stores, err)
	}
	if n, err := system.SweepRegions(regions, time.Now().Add(2*time.Hour)); err != nil || n != 0 {
		t.Fatalf("second sweep: %d, %v", n, err)
	}
}

// TestSweepRegionsPostgres: the sweep also removes the expired tombstones
// of messages kept in PostgreSQL (the participant kit), and only those.
func TestSweepRegionsPostgres(t *testing.T) {
	pg, err := pgstore.Open(t.Context(), pgtest.Database(t), pgstore.Options{Service: "messages@us-east", TombstoneTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pg.Close)
	r, err := chat.OpenRegion(chat.RegionOptions{Name: "us-east", InMemory: true, TombstoneTTL: time.Hour, MessagesStorage: pg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	kit := participant.New("messages", pg, participant.Options{})
	for _, id := range []string{"a", "b"} {
		if _, err := kit.Put(t.Context(), "conv/x", contract.Record{ID: id, Kind: "message"}, true, contract.Authority{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := kit.Delete(t.Context(), "conv/x", "a", true, contract.Authority{}); err != nil {
		t.Fatal(err)
	}
	regions := system.Regions{"us-east": r}
	if n, err := system.SweepRegions(regions, time.Now()); err != nil || n != 0 {
		t.Fatalf("sweep before expiry: %d, %v", n, err)
	}
	if n, err := system.SweepRegions(regions, time.Now().Add(2*time.Hour)); err != nil || n != 1 {
		t.Fatalf("sweep after expiry: %d (want 1), %v", n, err)
	}
	if recs, err := kit.Records(t.Context(), "conv/x"); err != nil || len(recs) != 1 || recs[0].ID != "b" {
		t.Fatalf("after the sweep: %v, %v", recs, err)
	}
}
