// Package controllerconfig loads and watches argo's workflow-controller ConfigMap and hands its current, last valid config to the controller.
package controllerconfig
