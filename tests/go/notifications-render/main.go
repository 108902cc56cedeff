// notifications-render executes Go text/template sources the way argocd-notifications does, for
// the differential test in tests/template.rs: the function map of notifications-engine's
// pkg/templates/service.go (Sprig's TxtFuncMap without env and expandenv, plus the three Slack
// helpers), and template variables holding numbers as Kubernetes' unstructured objects do (int64
// where the JSON number is an integer, float64 otherwise).
//
// Input on stdin: a JSON array of {"name", "text", "vars"}. Output on stdout: a JSON array of the
// same length, each {"out": base64 of the rendered bytes} or {"error": "..."}. The bytes travel as
// base64 because a render may hold invalid UTF-8 (trunc cuts bytes), and the comparison is byte
// for byte.
//
// Built in GOPATH mode against Debian's golang-github-masterminds-sprig-dev (see
// tests/support/gotemplate.rs), so it imports sprig by its GOPATH path.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"text/template"

	"github.com/Masterminds/sprig"
)

type renderCase struct {
	Name string          `json:"name"`
	Text string          `json:"text"`
	Vars json.RawMessage `json:"vars"`
}

type rendered struct {
	Out   []byte `json:"out,omitempty"`
	Error string `json:"error,omitempty"`
}

func funcMap() template.FuncMap {
	f := sprig.TxtFuncMap()
	delete(f, "env")
	delete(f, "expandenv")
	f["slackUserByEmail"] = func(email string) string { return fmt.Sprintf("__SLACK_USER_EMAIL__%s__", email) }
	f["slackChannel"] = func(name string) string { return fmt.Sprintf("__SLACK_CHANNEL__%s__", name) }
	f["slackUserGroup"] = func(name string) string { return fmt.Sprintf("__SLACK_USERGROUP__%s__", name) }
	return f
}

// unstructured converts json.Number the way k8s.io/apimachinery's util/json does for
// unstructured objects: int64 when it parses as one, float64 otherwise.
func unstructured(v interface{}) interface{} {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	case map[string]interface{}:
		for k, item := range v {
			v[k] = unstructured(item)
		}
		return v
	case []interface{}:
		for i, item := range v {
			v[i] = unstructured(item)
		}
		return v
	default:
		return v
	}
}

func render(f template.FuncMap, c renderCase) rendered {
	var vars interface{}
	decoder := json.NewDecoder(bytes.NewReader(c.Vars))
	decoder.UseNumber()
	if err := decoder.Decode(&vars); err != nil {
		return rendered{Error: "vars: " + err.Error()}
	}
	t, err := template.New(c.Name).Funcs(f).Parse(c.Text)
	if err != nil {
		return rendered{Error: "parse error: " + err.Error()}
	}
	var out bytes.Buffer
	if err := t.Execute(&out, unstructured(vars)); err != nil {
		return rendered{Error: "execution error: " + err.Error()}
	}
	return rendered{Out: out.Bytes()}
}

func main() {
	var cases []renderCase
	if err := json.NewDecoder(os.Stdin).Decode(&cases); err != nil {
		fmt.Fprintln(os.Stderr, "notifications-render: stdin:", err)
		os.Exit(2)
	}
	f := funcMap()
	results := make([]rendered, 0, len(cases))
	for _, c := range cases {
		results = append(results, render(f, c))
	}
	if err := json.NewEncoder(os.Stdout).Encode(results); err != nil {
		fmt.Fprintln(os.Stderr, "notifications-render: stdout:", err)
		os.Exit(2)
	}
}
