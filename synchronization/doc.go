// Package synchronization holds the controller's mutexes and semaphores (argo's spec.synchronization and
// template synchronization): which holder has which lock and who waits, shared by every workflow, rebuilt
// at start-up from the workflows' status.synchronization.
package synchronization
