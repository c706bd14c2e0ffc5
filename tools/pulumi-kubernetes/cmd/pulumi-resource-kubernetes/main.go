// Command pulumi-resource-kubernetes serves the Pulumi Kubernetes provider of the pinned
// github.com/pulumi/pulumi-kubernetes/provider/v4 module.
//
// The module's own main embeds schema-embed.json, a file `go generate` writes from schema.json
// and which the module zip does not carry. This main does the same job at start-up instead: it
// reads the schema.json that tools/build.py copies out of the module (next to this binary),
// stamps the provider version into it, and hands it to the provider's Serve function.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

// SchemaFile is the name tools/build.py gives the module's
// cmd/pulumi-resource-kubernetes/schema.json in the bin folder.
const SchemaFile = "pulumi-resource-kubernetes.schema.json"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-version" {
		fmt.Println(version.Version)
		return
	}
	schema, err := versionedSchema(version.Version)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-resource-kubernetes: %v\n", err)
		os.Exit(1)
	}
	// The Terraform mapping only serves `pulumi convert --from terraform`, which nothing here runs.
	provider.Serve("kubernetes", version.Version, schema, []byte("{}"))
}

// versionedSchema returns the schema beside the executable with its "version" set, as the
// provider reports it from GetSchema (the Python SDK is generated from the same schema).
func versionedSchema(providerVersion string) ([]byte, error) {
	if providerVersion == "" {
		return nil, fmt.Errorf("built without a version; build it with tools/build.py")
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("cannot find this executable: %w", err)
	}
	exe, err = filepath.EvalSymlinks(exe)
	if err != nil {
		return nil, fmt.Errorf("cannot resolve this executable: %w", err)
	}
	path := filepath.Join(filepath.Dir(exe), SchemaFile)
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("the provider schema is missing (%w); rebuild with tools/build.py", err)
	}
	var spec map[string]json.RawMessage
	if err := json.Unmarshal(raw, &spec); err != nil {
		return nil, fmt.Errorf("%s is not a JSON object: %w", path, err)
	}
	stamped, err := json.Marshal(providerVersion)
	if err != nil {
		return nil, err
	}
	spec["version"] = stamped
	return json.Marshal(spec)
}
