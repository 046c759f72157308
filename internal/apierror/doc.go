// Package apierror classifies API errors as worth retrying or not, without logging.
package apierror
