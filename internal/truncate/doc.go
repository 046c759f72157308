// Package truncate bounds user-controlled text quoted in messages, so a huge input never makes a status,
// an Event or an action outcome that the API server cannot store.
package truncate
