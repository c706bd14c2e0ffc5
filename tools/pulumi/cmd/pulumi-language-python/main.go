// Command pulumi-language-python is jobset-infra's Python language host for the Pulumi engine.
//
// Pulumi's own host (module github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3)
// is not served by the Go module proxy this project builds from, so this is a small host of
// ours, written against the LanguageRuntime gRPC service of the pinned sdk/v3 module. It does
// what `pulumi preview|up|refresh|destroy` of a Python program need and nothing more:
//
//   - Run: the project's virtualenv runs `pulumi-language-python-exec` (the SDK's own launcher,
//     copied next to this binary from the sdk/v3 module) with the arguments the engine's run
//     request carries, and the stack config in PULUMI_CONFIG / PULUMI_CONFIG_SECRET_KEYS;
//   - GetRequiredPackages: the Pulumi packages installed in that virtualenv (those shipping a
//     pulumi-plugin.json) whose provider plugin is on this machine; the others are named on
//     stderr and left out, because the engine never downloads plugins here;
//   - InstallDependencies installs nothing: the virtualenv is made by `make venv`;
//   - RunPlugin: a plugin written in Python (PulumiPlugin.yaml with `runtime: python`, such as
//     our component package, pulumi-package/) run by its virtualenv, its output streamed back;
//   - About, GetProgramDependencies, GetPluginInfo, Handshake, Cancel, RuntimeOptionsPrompts.
//
// Code generation, packing and linking are not implemented.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/common/util/logging"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
)

// ExecScript is the SDK's program launcher, expected beside this binary.
const ExecScript = "pulumi-language-python-exec"

// Version is stamped by tools/build.py with the Pulumi version the host was built against.
var Version = "dev"

// engineFlags are the flags an engine may start a language host with, beyond its address:
// sdk/v3's buildPluginArguments passes --logtostderr, -v=N (when the CLI runs with --logflow)
// and --tracing; the plugin host of sdk/v3 v3.206.0, which pulumi-language-yaml v1.25.0 runs
// in its own process to start our package, also passes -root=<plugin folder> and
// -<option>=<value> for each runtime option of PulumiPlugin.yaml (Pulumi's Python runtime
// knows virtualenv, toolchain and typechecker). Go's flag parser exits 2 on a flag it does not
// know, which the engine reports only as "could not read plugin [...]: exit status 2".
// Root and the runtime options are accepted and ignored: every request carries them again
// in its ProgramInfo, which is what this host uses; so is tracing (this host emits none).
// Logging is honoured (logging.InitLogging), as Pulumi's own plugins do.
var engineFlags = struct{ strings, bools []string }{
	strings: []string{"tracing", "root", "virtualenv", "toolchain", "typechecker", "v"},
	bools:   []string{"logtostderr", "logflow"},
}

// acceptEngineFlags declares those of engineFlags that no imported package (the sdk's
// logging registers glog's -v and -logtostderr) has declared already.
func acceptEngineFlags(flags *flag.FlagSet) {
	for _, name := range engineFlags.strings {
		if flags.Lookup(name) == nil {
			flags.String(name, "", "accepted from the engine; see engineFlags")
		}
	}
	for _, name := range engineFlags.bools {
		if flags.Lookup(name) == nil {
			flags.Bool(name, false, "accepted from the engine; see engineFlags")
		}
	}
}

func main() {
	showVersion := flag.Bool("version", false, "print the version and exit")
	acceptEngineFlags(flag.CommandLine)
	flag.Parse()
	logging.InitLogging(false, 0, false) // -v and -logtostderr as parsed above
	if *showVersion {
		fmt.Println(Version)
		return
	}
	if err := serve(flag.Args()); err != nil {
		fmt.Fprintf(os.Stderr, "pulumi-language-python: %v\n", err)
		os.Exit(1)
	}
}

func serve(args []string) error {
	launcher, err := execScript()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	host := newHost(launcher)
	if len(args) > 0 { // the engine's address, when the engine starts us
		if err := host.watchEngine(ctx, args[0], stop); err != nil {
			return err
		}
	}
	cancel := make(chan bool)
	go func() {
		<-ctx.Done()
		close(cancel)
	}()
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Cancel: cancel,
		Init: func(server *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(server, host)
			return nil
		},
	})
	if err != nil {
		return fmt.Errorf("cannot serve the language runtime: %w", err)
	}
	fmt.Printf("%d\n", handle.Port) // the engine reads the port from our first line
	if err := <-handle.Done; err != nil {
		return fmt.Errorf("stopped serving: %w", err)
	}
	return nil
}

// execScript finds the launcher next to the real (symlink-resolved) executable.
func execScript() (string, error) {
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return "", fmt.Errorf("cannot locate this executable: %w", err)
	}
	path := filepath.Join(filepath.Dir(exe), ExecScript)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%s must sit beside this binary (tools/build.py copies it from the "+
			"sdk/v3 module): %w", ExecScript, err)
	}
	return path, nil
}

// watchEngine ends this process once the engine stops answering health checks, as every
// plugin must: an engine that crashed would otherwise leave us running.
func (h *host) watchEngine(ctx context.Context, address string, stop context.CancelFunc) error {
	h.setEngine(address)
	if err := rpcutil.Healthcheck(ctx, address, 5*time.Minute, stop); err != nil {
		return fmt.Errorf("cannot health-check the engine at %s: %w", address, err)
	}
	return nil
}
