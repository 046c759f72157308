package interop

import (
	"context"
	"fmt"
	"sync"
)

// Suite runs scenarios in modes under both controllers: for each scenario and mode, argo's run and
// wfguard's at the same time (each in its namespace), InFlight scenarios at once.
type Suite struct {
	Env       *Env
	Scenarios []Scenario
	Modes     []Mode
	// InFlight is how many scenario runs go at once (each under both controllers). Default 3.
	InFlight int
	Logf     func(format string, args ...any)
}

// Run returns the rows of every step in the order of Scenarios and Modes.
func (s Suite) Run(ctx context.Context) ([]Row, error) {
	type job struct {
		scenario Scenario
		mode     Mode
	}
	var jobs []job
	for _, sc := range s.Scenarios {
		for _, m := range s.Modes {
			jobs = append(jobs, job{sc, m})
		}
	}
	rows := make([][]Row, len(jobs))
	errs := make([]error, len(jobs))
	if s.InFlight <= 0 {
		s.InFlight = 3
	}
	sem := make(chan struct{}, s.InFlight)
	var wg sync.WaitGroup
	for i, j := range jobs {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			rows[i], errs[i] = s.pair(ctx, j.scenario, j.mode)
		}()
	}
	wg.Wait()
	var all []Row
	for i := range jobs {
		if errs[i] != nil {
			return nil, errs[i]
		}
		all = append(all, rows[i]...)
	}
	return all, nil
}

// pair runs one scenario in one mode under both controllers at once and compares the runs.
func (s Suite) pair(ctx context.Context, sc Scenario, mode Mode) ([]Row, error) {
	var results [2][]Result
	var errs [2]error
	var wg sync.WaitGroup
	for i, t := range s.Env.Targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = s.Env.Run(ctx, sc, t, mode)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("%s (%s) under %s: %w", sc.Name, mode, s.Env.Targets[i].Controller, err)
		}
	}
	if s.Logf != nil {
		s.Logf("ran %s (%s)", sc.Name, mode)
	}
	return Compare(sc.Name, mode, results[0], results[1]), nil
}
