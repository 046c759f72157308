// Package passdemand decides whether a workflow key handed out by the queue needs a pass: a change seen since its last pass began, or the time a pass asked for.
package passdemand
