package controlplane

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Process is a child process of the control plane (or of the compat oracle). Children run in their own
// process group and die with their parent (Pdeathsig), so a panicking test cannot leave an apiserver behind.
type Process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	waitErr error
}

// StartProcess starts binary with args (and env, or the parent's environment when nil), its output going to
// logPath.
func StartProcess(name, binary, logPath string, args, env []string) (*Process, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating log file for %s: %w", name, err)
	}
	cmd := exec.Command(binary, args...)
	cmd.Env = env // nil: the parent's environment
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s (%s): %w", name, binary, err)
	}
	p := &Process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the child's process ID (also its process group ID).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

func (p *Process) exited() bool {
	exited, _ := p.Exited()
	return exited
}

// Exited reports whether the process has exited, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// LogPath is the file holding the process's output.
func (p *Process) LogPath() string { return p.logPath }

// Stop asks the process group to terminate and kills it after grace. It is safe to call more than once.
func (p *Process) Stop(grace time.Duration) error {
	if p.exited() {
		return nil
	}
	_ = syscall.Kill(-p.Pid(), syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, p.Pid())
		}
	}
	// The group may hold helpers of the child; make sure none survives.
	if err := syscall.Kill(-p.Pid(), syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing what is left of %s's process group: %w", p.name, err)
	}
	return nil
}

// LogTail returns the last n lines of the process log, for error messages.
func (p *Process) LogTail(n int) string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(bytes.ToValidUTF8(data, nil)), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// exitError describes an early exit, naming a port clash when the log shows one.
func (p *Process) exitError() error {
	tail := p.LogTail(15)
	if strings.Contains(tail, "address already in use") {
		return &portInUseError{name: p.name, tail: tail}
	}
	return fmt.Errorf("%s exited early (%v); last log lines:\n%s", p.name, p.waitErr, tail)
}

type portInUseError struct{ name, tail string }

func (e *portInUseError) Error() string {
	return fmt.Sprintf("%s could not bind its port (address already in use; another process took the free port "+
		"between probe and start); last log lines:\n%s", e.name, e.tail)
}

// processGone reports whether no process with this pid exists any more.
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
