// Package provenance proves that a record was written by the controller: a seal only the holder of the controller's key can make.
package provenance
