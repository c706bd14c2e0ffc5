package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/pulumi/pulumi/sdk/v3/python/toolchain"
)

// RunPlugin runs a plugin written in Python: a folder whose PulumiPlugin.yaml says `runtime:
// python`, such as jobset-infra's component package (pulumi-package/). The engine asks for it
// when a program in any language uses such a package; the plugin's output comes back on the
// stream (its first stdout line is the port the engine then dials), and its exit code last.
func (h *host) RunPlugin(req *pulumirpc.RunPluginRequest,
	server pulumirpc.LanguageRuntime_RunPluginServer,
) error {
	ctx := server.Context()
	info := req.GetInfo()
	python, err := pythonFor(info)
	if err != nil {
		return err
	}
	if err := python.ValidateVenv(ctx); err != nil {
		return fmt.Errorf("plugin %s: %w (its PulumiPlugin.yaml names the virtualenv, "+
			"relative to the plugin's folder)", info.GetProgramDirectory(), err)
	}
	venv, err := python.VirtualEnvPath(ctx)
	if err != nil {
		return err
	}
	// Python runs a folder by its __main__.py; the entry point is "." for a plugin folder.
	entry := filepath.Join(info.GetProgramDirectory(), info.GetEntryPoint())
	cmd, err := python.Command(ctx, append([]string{entry}, req.GetArgs()...)...)
	if err != nil {
		return err
	}
	cmd.Dir = req.GetPwd()
	cmd.Env = pluginEnv(req.GetEnv(), venv)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Second
	stream := &pluginStream{server: server}
	cmd.Stdout, cmd.Stderr = stream.writer(false), stream.writer(true)
	code, err := exitCode(cmd.Run())
	if err != nil {
		return fmt.Errorf("could not run the plugin in %s: %w", entry, err)
	}
	return stream.send(&pulumirpc.RunPluginResponse{
		Output: &pulumirpc.RunPluginResponse_Exitcode{Exitcode: code},
	})
}

// pluginEnv is the environment the engine gives the plugin (its own when it gives none), with
// the plugin's virtualenv activated when it names one.
func pluginEnv(given []string, venv string) []string {
	env := given
	if len(env) == 0 {
		env = os.Environ()
	}
	if venv == "" {
		return env
	}
	return toolchain.ActivateVirtualEnv(env, venv)
}

// exitCode is the plugin's exit code; an error only when it could not be run at all.
func exitCode(err error) (int32, error) {
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit):
		return int32(exit.ExitCode()), nil
	default:
		return 0, err
	}
}

// pluginStream sends the plugin's output to the engine. exec copies stdout and stderr in a
// goroutine each, and a gRPC stream must not be sent on from two goroutines at once.
type pluginStream struct {
	mu     sync.Mutex
	server pulumirpc.LanguageRuntime_RunPluginServer
}

func (s *pluginStream) send(resp *pulumirpc.RunPluginResponse) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.server.Send(resp)
}

func (s *pluginStream) writer(stderr bool) *pluginWriter {
	return &pluginWriter{stream: s, stderr: stderr}
}

type pluginWriter struct {
	stream *pluginStream
	stderr bool
}

func (w *pluginWriter) Write(p []byte) (int, error) {
	// The stream keeps the slice until it is sent; exec reuses its buffer after Write returns.
	chunk := append([]byte(nil), p...)
	resp := &pulumirpc.RunPluginResponse{Output: &pulumirpc.RunPluginResponse_Stdout{Stdout: chunk}}
	if w.stderr {
		resp = &pulumirpc.RunPluginResponse{Output: &pulumirpc.RunPluginResponse_Stderr{Stderr: chunk}}
	}
	if err := w.stream.send(resp); err != nil {
		return 0, err
	}
	return len(p), nil
}
