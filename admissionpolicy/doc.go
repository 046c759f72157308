// Package admissionpolicy tells whether a ValidatingAdmissionPolicy wfguard ships was in force when an object
// was admitted. Some checks only admission can make (who the requester is, what else it may do), and the
// controller, which never learns the requester, acts on such an object only when the policy that made the
// check was installed, bound to every namespace, denying, and already in force when the object was created.
package admissionpolicy
