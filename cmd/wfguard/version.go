package main

import (
	"runtime"
	"runtime/debug"

	"github.com/wfguard/wfguard/argometrics"
)

// Set at link time (make image: -ldflags "-X main.version=... -X main.gitCommit=... -X main.buildDate=...").
var (
	version   = "untagged"
	gitCommit = ""
	buildDate = ""
)

// buildInfo labels argo_workflows_version with what this binary knows of its build.
func buildInfo() argometrics.BuildInfo {
	b := argometrics.BuildInfo{Version: version, Platform: runtime.GOOS + "/" + runtime.GOARCH, GoVersion: runtime.Version(),
		BuildDate: buildDate, Compiler: runtime.Compiler, GitCommit: gitCommit, GitTreeState: "", GitTag: version}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			switch {
			case s.Key == "vcs.revision" && b.GitCommit == "":
				b.GitCommit = s.Value
			case s.Key == "vcs.modified" && s.Value == "true":
				b.GitTreeState = "dirty"
			case s.Key == "vcs.modified":
				b.GitTreeState = "clean"
			}
		}
	}
	return b
}
