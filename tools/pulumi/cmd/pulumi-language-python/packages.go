package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
)

// listPlugins prints, as JSON, every installed distribution that ships a pulumi-plugin.json
// (how a Pulumi provider SDK says which plugin it needs) with that file's contents.
const listPlugins = `
import importlib.metadata as md, json, sys
found = {}
for dist in md.distributions():
    for f in dist.files or ():
        if f.name != "pulumi-plugin.json":
            continue
        try:
            plugin = json.loads(f.read_text() or "{}")
        except (OSError, ValueError):
            continue
        found[dist.metadata["Name"]] = {"version": dist.version, "plugin": plugin}
json.dump(found, sys.stdout)
`

// sdkPlugin is one provider SDK found in the virtualenv.
type sdkPlugin struct {
	Version string `json:"version"`
	Plugin  struct {
		Resource bool   `json:"resource"`
		Name     string `json:"name"`
		Version  string `json:"version"`
		Server   string `json:"server"`
	} `json:"plugin"`
}

// requiredPlugin is a resource plugin the program's SDKs name, with where it was looked for.
type requiredPlugin struct {
	Distribution, Name, Version, Server string
	Found                               bool
}

func (h *host) GetRequiredPackages(ctx context.Context, req *pulumirpc.GetRequiredPackagesRequest,
) (*pulumirpc.GetRequiredPackagesResponse, error) {
	plugins, err := requiredPlugins(ctx, req.GetInfo())
	if err != nil {
		return nil, err
	}
	packages := []*pulumirpc.PackageDependency{}
	for _, p := range available(plugins) {
		packages = append(packages, &pulumirpc.PackageDependency{
			Kind: "resource", Name: p.Name, Version: p.Version, Server: p.Server,
		})
	}
	return &pulumirpc.GetRequiredPackagesResponse{Packages: packages}, nil
}

func (h *host) GetRequiredPlugins(ctx context.Context, req *pulumirpc.GetRequiredPluginsRequest,
) (*pulumirpc.GetRequiredPluginsResponse, error) {
	plugins, err := requiredPlugins(ctx, req.GetInfo())
	if err != nil {
		return nil, err
	}
	deps := []*pulumirpc.PluginDependency{}
	for _, p := range available(plugins) {
		deps = append(deps, &pulumirpc.PluginDependency{
			Kind: "resource", Name: p.Name, Version: p.Version, Server: p.Server,
		})
	}
	return &pulumirpc.GetRequiredPluginsResponse{Plugins: deps}, nil
}

// available keeps the plugins this machine has. The engine here never downloads a plugin
// (PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION), so reporting a missing one would fail every
// run, even of a program that never creates that provider's resources (the local stack has
// pulumi-gcp installed but creates no GCP resource). Each one left out is named on stderr; a
// program that does use it fails at its first resource with the engine's "no resource plugin"
// error.
func available(plugins []requiredPlugin) []requiredPlugin {
	var kept []requiredPlugin
	for _, p := range plugins {
		if p.Found {
			kept = append(kept, p)
			continue
		}
		fmt.Fprintf(os.Stderr, "note: %s %s needs the %s plugin, which is not on PATH or in "+
			"$PULUMI_HOME/plugins; not reporting it (a resource of that provider would fail)\n",
			p.Distribution, p.Version, p.Name)
	}
	return kept
}

func requiredPlugins(ctx context.Context, info *pulumirpc.ProgramInfo) ([]requiredPlugin, error) {
	python, err := pythonFor(info)
	if err != nil {
		return nil, err
	}
	if err := python.ValidateVenv(ctx); err != nil {
		return nil, err
	}
	cmd, err := python.Command(ctx, "-c", listPlugins)
	if err != nil {
		return nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("cannot list the virtualenv's Pulumi packages: %w: %s", err,
			strings.TrimSpace(stderr.String()))
	}
	var sdks map[string]sdkPlugin
	if err := json.Unmarshal(out, &sdks); err != nil {
		return nil, fmt.Errorf("cannot read the virtualenv's Pulumi packages: %w", err)
	}
	var plugins []requiredPlugin
	for dist, sdk := range sdks {
		if !sdk.Plugin.Resource {
			continue
		}
		name := sdk.Plugin.Name
		if name == "" {
			name = strings.TrimPrefix(strings.ToLower(dist), "pulumi-")
		}
		version := sdk.Plugin.Version
		if version == "" {
			version = sdk.Version
		}
		plugins = append(plugins, requiredPlugin{
			Distribution: dist, Name: name, Version: version, Server: sdk.Plugin.Server,
			Found: pluginOnMachine(name, version),
		})
	}
	sort.Slice(plugins, func(i, j int) bool { return plugins[i].Name < plugins[j].Name })
	return plugins, nil
}

// pluginOnMachine says whether the engine can load plugin `name` without downloading it:
// a pulumi-resource-<name> on PATH (the engine's ambient plugins) or an installed copy.
func pluginOnMachine(name, version string) bool {
	if _, err := exec.LookPath("pulumi-resource-" + name); err == nil {
		return true
	}
	home := os.Getenv("PULUMI_HOME")
	if home == "" {
		userHome, err := os.UserHomeDir()
		if err != nil {
			return false
		}
		home = filepath.Join(userHome, ".pulumi")
	}
	installed := filepath.Join(home, "plugins", fmt.Sprintf("resource-%s-v%s", name,
		strings.TrimPrefix(version, "v")))
	_, err := os.Stat(installed)
	return err == nil
}
