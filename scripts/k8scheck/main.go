// Command k8scheck checks Kubernetes manifests against the API's own Go
// types (k8s.io/api): each YAML document is decoded strictly into the
// type its apiVersion and kind name, so a misspelt or misplaced field, or
// a value of the wrong type, is an error naming it. It is the schema check
// of scripts/test-recipes, a module of its own so that kerneldiff itself
// does not depend on k8s.io. It knows the kinds the recipes use (batch/v1
// Job, v1 PersistentVolumeClaim).
//
// Usage: go run . FILE.yaml...    Exit 0 when every document is valid, 1
// otherwise (one line per problem), 2 for usage.
package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: k8scheck FILE.yaml...")
		os.Exit(2)
	}
	bad := 0
	for _, path := range os.Args[1:] {
		data, err := os.ReadFile(path)
		if err != nil {
			fmt.Println(err)
			bad++
			continue
		}
		for i, doc := range bytes.Split(data, []byte("\n---")) {
			if strings.TrimSpace(stripComments(string(doc))) == "" {
				continue
			}
			if err := check(doc); err != nil {
				fmt.Printf("%s: document %d: %v\n", path, i+1, err)
				bad++
			} else {
				fmt.Printf("%s: document %d: valid\n", path, i+1)
			}
		}
	}
	if bad > 0 {
		os.Exit(1)
	}
}

func stripComments(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// check decodes one document strictly into the type of its kind.
func check(doc []byte) error {
	var meta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		return err
	}
	var obj any
	switch meta.APIVersion + " " + meta.Kind {
	case "batch/v1 Job":
		obj = &batchv1.Job{}
	case "v1 PersistentVolumeClaim":
		obj = &corev1.PersistentVolumeClaim{}
	default:
		return fmt.Errorf("kind %s %s is not one this check knows", meta.APIVersion, meta.Kind)
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return err
	}
	if j, ok := obj.(*batchv1.Job); ok {
		if len(j.Spec.Template.Spec.Containers) == 0 {
			return fmt.Errorf("job %s has no containers", j.Name)
		}
		if p := j.Spec.Template.Spec.RestartPolicy; p != corev1.RestartPolicyNever && p != corev1.RestartPolicyOnFailure {
			return fmt.Errorf("job %s: restartPolicy %q, a Job needs Never or OnFailure", j.Name, p)
		}
	}
	return nil
}
