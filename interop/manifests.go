package interop

// The scenarios' manifests. "{p}" is the run's prefix (scenario and mode), so the runs of one namespace never
// share a name. The simulated node (compat.ExecutorModel) ends a container with 1 when its command holds a
// literal failing exit, so `exit {{workflow.parameters.code}}` fails or succeeds by parameter.

// sayTemplate is a container that succeeds, last in a manifest's templates.
const sayTemplate = `  - name: say
    container:
      image: busybox
      command: [echo, hello]
`

// workflowHead starts every Workflow manifest.
const workflowHead = `apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata:
  generateName: {p}-
spec:
`

// twoSteps is a plain workflow: two steps, one after the other.
const twoSteps = workflowHead + `  entrypoint: main
  templates:
  - name: main
    steps:
    - - name: a
        template: say
    - - name: b
        template: say
` + sayTemplate

// approval waits at a suspend node for an answer (an output parameter supplied by node set or resume), then
// echoes it; its exit handler runs on every ending.
const approval = workflowHead + `  entrypoint: main
  onExit: bye
  templates:
  - name: main
    steps:
    - - name: approve
        template: approve
    - - name: after
        template: echo
        arguments:
          parameters:
          - name: msg
            value: "{{steps.approve.outputs.parameters.answer}}"
  - name: approve
    suspend: {}
    outputs:
      parameters:
      - name: answer
        valueFrom:
          supplied: {}
          default: "no answer"
  - name: echo
    inputs:
      parameters:
      - name: msg
    container:
      image: busybox
      command: [echo, "{{inputs.parameters.msg}}"]
  - name: bye
    container:
      image: busybox
      command: [echo, bye]
`

// gated waits at a gate, then runs two steps.
const gated = workflowHead + `  entrypoint: main
  templates:
  - name: main
    steps:
    - - name: gate
        template: gate
    - - name: a
        template: say
    - - name: b
        template: say
  - name: gate
    suspend: {}
` + sayTemplate

// failing runs a, then b, which exits with the parameter code (1 unless set).
const failing = workflowHead + `  entrypoint: main
  arguments:
    parameters:
    - name: code
      value: "1"
  templates:
  - name: main
    steps:
    - - name: a
        template: say
    - - name: b
        template: fail
  - name: fail
    container:
      image: busybox
      command: [sh, -c, "exit {{workflow.parameters.code}}"]
` + sayTemplate

// template is a WorkflowTemplate with a parameter.
const template = `apiVersion: argoproj.io/v1alpha1
kind: WorkflowTemplate
metadata:
  name: {p}-tmpl
spec:
  entrypoint: main
  arguments:
    parameters:
    - name: who
      value: world
  templates:
  - name: main
    container:
      image: busybox
      command: [echo, "hello {{workflow.parameters.who}}"]
`

// cron is a CronWorkflow due once a year, so it never runs during a test on its own.
const cron = `apiVersion: argoproj.io/v1alpha1
kind: CronWorkflow
metadata:
  name: {p}-cron
spec:
  schedules: ["0 0 1 1 *"]
  workflowSpec:
    entrypoint: main
    templates:
    - name: main
      container:
        image: busybox
        command: [echo, tick]
`
