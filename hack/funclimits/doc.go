// Command funclimits reports product functions that outgrow what a reader holds in their head: a body
// over -max-lines lines, more than -max-params parameters, or a cyclomatic complexity over
// -max-complexity. It exits 1 when it reports anything; `make lint` runs it.
package main
