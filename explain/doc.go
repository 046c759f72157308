// Package explain says, for one workflow, what each node is and what every unfinished node waits on and since when.
package explain
