package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/pulumi/pulumi/sdk/v3/python/toolchain"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"
)

// exitAfterUserMessage is the launcher's exit code for "the error is already printed".
const exitAfterUserMessage = 32

// host implements pulumirpc.LanguageRuntimeServer; methods not defined here answer
// Unimplemented through the embedded type.
type host struct {
	pulumirpc.UnimplementedLanguageRuntimeServer

	launcher string
	mu       sync.Mutex
	engine   string
	// cancelled ends every running program when the engine calls Cancel.
	cancelled context.Context
	cancel    context.CancelFunc
}

func newHost(launcher string) *host {
	ctx, cancel := context.WithCancel(context.Background())
	return &host{launcher: launcher, cancelled: ctx, cancel: cancel}
}

func (h *host) setEngine(address string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.engine = address
}

func (h *host) engineAddress() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.engine
}

func (h *host) Handshake(ctx context.Context, req *pulumirpc.LanguageHandshakeRequest,
) (*pulumirpc.LanguageHandshakeResponse, error) {
	h.setEngine(req.GetEngineAddress())
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

func (h *host) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: Version}, nil
}

func (h *host) Cancel(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	h.cancel()
	return &emptypb.Empty{}, nil
}

// pythonFor resolves the program's virtualenv the way Pulumi.yaml names it
// (runtime.options.virtualenv, relative to the project root).
func pythonFor(info *pulumirpc.ProgramInfo) (toolchain.Toolchain, error) {
	if info == nil {
		return nil, status.Error(codes.InvalidArgument, "the request carries no program info")
	}
	options := info.GetOptions().AsMap()
	opts := toolchain.PythonOptions{
		Root:       info.GetRootDirectory(),
		ProgramDir: info.GetProgramDirectory(),
		Toolchain:  toolchain.Pip,
	}
	if name, ok := options["toolchain"]; ok && name != "pip" {
		return nil, fmt.Errorf("runtime.options.toolchain %v: this language host runs pip "+
			"virtualenvs only; remove the option or set it to pip", name)
	}
	if venv, ok := options["virtualenv"]; ok {
		path, isString := venv.(string)
		if !isString {
			return nil, errors.New("runtime.options.virtualenv must be a string (a folder path)")
		}
		opts.Virtualenv = path
	}
	if _, ok := options["typechecker"]; ok {
		return nil, errors.New("runtime.options.typechecker is not supported by this language " +
			"host; run mypy yourself (make check)")
	}
	return toolchain.ResolveToolchain(opts)
}

func (h *host) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	python, err := pythonFor(req.GetInfo())
	if err != nil {
		return nil, err
	}
	if err := python.ValidateVenv(ctx); err != nil {
		return nil, err
	}
	config, err := json.Marshal(req.GetConfig())
	if err != nil {
		return nil, fmt.Errorf("cannot encode the stack config: %w", err)
	}
	secretKeys := req.GetConfigSecretKeys()
	if secretKeys == nil {
		secretKeys = []string{}
	}
	secrets, err := json.Marshal(secretKeys)
	if err != nil {
		return nil, fmt.Errorf("cannot encode the secret config keys: %w", err)
	}
	runCtx, stop := context.WithCancel(h.cancelled)
	defer stop()
	context.AfterFunc(ctx, stop)
	cmd, err := python.Command(runCtx, append([]string{h.launcher}, runArguments(req, h.engineAddress())...)...)
	if err != nil {
		return nil, err
	}
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, "PULUMI_CONFIG="+string(config), "PULUMI_CONFIG_SECRET_KEYS="+string(secrets))
	return runResult(cmd.Run()), nil
}

// runArguments is the launcher's command line: its flags, the entry point, the program's args.
func runArguments(req *pulumirpc.RunRequest, engine string) []string {
	var args []string
	flagIfSet := func(name, value string) {
		if value != "" {
			args = append(args, "--"+name, value)
		}
	}
	flagIfSet("monitor", req.GetMonitorAddress())
	flagIfSet("engine", engine)
	flagIfSet("project", req.GetProject())
	flagIfSet("root_directory", req.GetInfo().GetRootDirectory())
	flagIfSet("stack", req.GetStack())
	flagIfSet("pwd", req.GetPwd())
	flagIfSet("dry_run", strconv.FormatBool(req.GetDryRun()))
	flagIfSet("parallel", strconv.Itoa(int(req.GetParallel())))
	flagIfSet("organization", req.GetOrganization())
	entry := req.GetInfo().GetEntryPoint()
	if entry == "" {
		entry = "."
	}
	args = append(args, entry)
	return append(args, req.GetArgs()...)
}

// runResult turns the program's exit into the engine's answer: an error message, or a bail
// when the program already printed its own.
func runResult(err error) *pulumirpc.RunResponse {
	if err == nil {
		return &pulumirpc.RunResponse{}
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.ExitStatus() == exitAfterUserMessage {
			return &pulumirpc.RunResponse{Bail: true}
		}
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("program exited with code %d", exit.ExitCode())}
	}
	return &pulumirpc.RunResponse{Error: fmt.Sprintf("could not run the Python program: %v", err)}
}

func (h *host) InstallDependencies(req *pulumirpc.InstallDependenciesRequest,
	server pulumirpc.LanguageRuntime_InstallDependenciesServer,
) error {
	python, err := pythonFor(req.GetInfo())
	if err != nil {
		return err
	}
	if err := python.ValidateVenv(server.Context()); err != nil {
		return fmt.Errorf("%w; create it with `make venv` (this host installs nothing)", err)
	}
	path, err := python.VirtualEnvPath(server.Context())
	if err != nil {
		return err
	}
	note := fmt.Sprintf("Nothing to install: the virtualenv %s exists; `make venv` manages it.\n", path)
	return server.Send(&pulumirpc.InstallDependenciesResponse{Stdout: []byte(note)})
}

func (h *host) RuntimeOptionsPrompts(context.Context, *pulumirpc.RuntimeOptionsRequest,
) (*pulumirpc.RuntimeOptionsResponse, error) {
	return &pulumirpc.RuntimeOptionsResponse{}, nil
}

func (h *host) About(ctx context.Context, req *pulumirpc.AboutRequest) (*pulumirpc.AboutResponse, error) {
	info := req.GetInfo()
	if info == nil {
		info = &pulumirpc.ProgramInfo{}
	}
	python, err := pythonFor(info)
	if err != nil {
		return nil, err
	}
	about, err := python.About(ctx)
	if err != nil {
		return nil, err
	}
	return &pulumirpc.AboutResponse{
		Executable: about.PythonExecutable,
		Version:    about.PythonVersion.String(),
		Metadata:   map[string]string{"toolchain": "pip", "host": "jobset-infra " + Version},
	}, nil
}

func (h *host) GetProgramDependencies(ctx context.Context, req *pulumirpc.GetProgramDependenciesRequest,
) (*pulumirpc.GetProgramDependenciesResponse, error) {
	python, err := pythonFor(req.GetInfo())
	if err != nil {
		return nil, err
	}
	listed, err := python.ListPackages(ctx, req.GetTransitiveDependencies())
	if err != nil {
		return nil, fmt.Errorf("cannot list the virtualenv's packages: %w", err)
	}
	deps := make([]*pulumirpc.DependencyInfo, 0, len(listed))
	for _, dep := range listed {
		deps = append(deps, &pulumirpc.DependencyInfo{Name: dep.Name, Version: dep.Version})
	}
	return &pulumirpc.GetProgramDependenciesResponse{Dependencies: deps}, nil
}
