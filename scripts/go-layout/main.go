// Command go-layout prints the Go struct layout of core/v1 PodTemplateSpec (every type it
// reaches, fields in declaration order, Go type strings, JSON names) as the Rust table in
// controller-manager/src/deephash/go_layout.rs, which k1s uses to print a template as go-spew
// does (see deephash.rs).
//
// Not part of the build. To regenerate for another Kubernetes version, put k8s.io/api and
// k8s.io/apimachinery at that version (and their imports) in a GOPATH, then
//
//	GO111MODULE=off GOPATH=... go run ./scripts/go-layout > /tmp/layout.rs
//
// and replace everything below the header of go_layout.rs with the output. Then check a few
// templates' hashes against a kube-controller-manager of that version (the test vectors in
// controller_utils.rs).
package main

import (
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
)

var names = map[reflect.Type]string{}
var order []reflect.Type

func ident(t reflect.Type) string {
	if n, ok := names[t]; ok {
		return n
	}
	s := t.String()
	r := strings.NewReplacer("*", "PTR_", "[]", "SLICE_", "map[", "MAP_", "]", "_", ".", "_")
	n := "T_" + strings.ToUpper(r.Replace(s))
	if t.PkgPath() != "" && strings.Contains(t.PkgPath(), "apimachinery") && strings.HasPrefix(s, "v1.") {
		n = "T_META" + n[1:]
	}
	names[t] = n
	order = append(order, t)
	switch t.Kind() {
	case reflect.Ptr, reflect.Slice:
		ident(t.Elem())
	case reflect.Map:
		ident(t.Key())
		ident(t.Elem())
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			ident(t.Field(i).Type)
		}
	}
	return n
}

func main() {
	root := ident(reflect.TypeOf(v1.PodTemplateSpec{}))
	_ = root
	sorted := append([]reflect.Type(nil), order...)
	sort.Slice(sorted, func(i, j int) bool { return names[sorted[i]] < names[sorted[j]] })
	w := os.Stdout
	for _, t := range sorted {
		n := names[t]
		s := t.String()
		switch t.Kind() {
		case reflect.Ptr:
			fmt.Fprintf(w, "static %s: GoType = GoType::Ptr(%q, &%s);\n", n, s, names[t.Elem()])
		case reflect.Slice:
			fmt.Fprintf(w, "static %s: GoType = GoType::Slice(%q, &%s);\n", n, s, names[t.Elem()])
		case reflect.Map:
			fmt.Fprintf(w, "static %s: GoType = GoType::Map(%q, &%s, &%s);\n", n, s, names[t.Key()], names[t.Elem()])
		case reflect.String:
			fmt.Fprintf(w, "static %s: GoType = GoType::Str(%q);\n", n, s)
		case reflect.Bool:
			fmt.Fprintf(w, "static %s: GoType = GoType::Bool(%q);\n", n, s)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			fmt.Fprintf(w, "static %s: GoType = GoType::Int(%q);\n", n, s)
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			fmt.Fprintf(w, "static %s: GoType = GoType::Uint(%q);\n", n, s)
		case reflect.Struct:
			fmt.Fprintf(w, "static %s: GoType = GoType::Struct(%q, &[\n", n, s)
			for i := 0; i < t.NumField(); i++ {
				f := t.Field(i)
				tag := f.Tag.Get("json")
				parts := strings.Split(tag, ",")
				json := parts[0]
				inline := false
				for _, p := range parts[1:] {
					if p == "inline" {
						inline = true
					}
				}
				if tag == "" && f.Anonymous && f.Type.Kind() == reflect.Struct {
					inline = true
				}
				if json == "" {
					json = f.Name
				}
				fmt.Fprintf(w, "    Field { name: %q, json: %q, inline: %v, ty: &%s },\n", f.Name, json, inline, names[f.Type])
			}
			fmt.Fprintf(w, "]);\n")
		default:
			fmt.Fprintf(os.Stderr, "unhandled kind %s for %s\n", t.Kind(), s)
			os.Exit(1)
		}
	}
	fmt.Fprintf(w, "\n/// `v1.PodTemplateSpec`.\npub static POD_TEMPLATE_SPEC: &GoType = &%s;\n", root)
}
