package cutover_test

// The in-flight workload: short workflows of every engine shape. Each template named "long" holds its pod
// running until the test opens the gate, so the switch happens with pods running and earlier nodes done.
var workflows = map[string]string{
	"steps": `
metadata: {name: steps}
spec:
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: a, template: quick}, {name: b, template: long}], [{name: c, template: quick}]]
  - {name: quick, container: {image: alpine, command: ["true"]}}
  - {name: long, container: {image: alpine, command: ["true"]}}
`,
	"dag": `
metadata: {name: dag}
spec:
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - {name: a, template: quick}
      - {name: b, template: long, depends: a}
      - {name: c, template: quick, depends: a}
      - {name: d, template: quick, depends: b && c}
  - {name: quick, container: {image: alpine, command: ["true"]}}
  - {name: long, container: {image: alpine, command: ["true"]}}
`,
	"loop": `
metadata: {name: loop}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: each, template: echo, arguments: {parameters: [{name: item, value: "{{item}}"}]}, withItems: [x, y]}
    - - {name: wait, template: long}
    - - {name: again, template: echo, arguments: {parameters: [{name: item, value: "{{item}}"}]}, withItems: [z]}
  - name: echo
    inputs: {parameters: [{name: item}]}
    container: {image: alpine, command: [echo, "{{inputs.parameters.item}}"]}
  - {name: long, container: {image: alpine, command: ["true"]}}
`,
	"outputs": `
metadata: {name: outputs}
spec:
  entrypoint: main
  templates:
  - name: main
    steps:
    - - {name: gen, template: gen}
    - - {name: wait, template: long}
    - - name: use
        template: use
        arguments: {parameters: [{name: in, value: "{{steps.gen.outputs.parameters.out}}"}, {name: res, value: "{{steps.gen.outputs.result}}"}]}
    outputs:
      parameters:
      - {name: final, valueFrom: {parameter: "{{steps.use.outputs.parameters.echoed}}"}}
  - name: gen
    script: {image: alpine, command: [sh], source: "echo hi > /tmp/out"}
    outputs: {parameters: [{name: out, valueFrom: {path: /tmp/out}}]}
  - name: use
    inputs: {parameters: [{name: in}, {name: res}]}
    container: {image: alpine, command: [sh, -c, "echo {{inputs.parameters.in}} {{inputs.parameters.res}} > /tmp/e"]}
    outputs: {parameters: [{name: echoed, valueFrom: {path: /tmp/e}}]}
  - {name: long, container: {image: alpine, command: ["true"]}}
`,
	"suspend": `
metadata: {name: suspend}
spec:
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: a, template: quick}], [{name: approve, template: approve}], [{name: b, template: quick}]]
  - {name: quick, container: {image: alpine, command: ["true"]}}
  - {name: approve, suspend: {}}
`,
	"long": `
metadata: {name: long}
spec:
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: first, template: quick}], [{name: hold, template: long}], [{name: last, template: quick}]]
  - {name: quick, container: {image: alpine, command: ["true"]}}
  - {name: long, container: {image: alpine, command: ["true"]}}
`,
}

// refused is a workflow argo runs and wfguard refuses (argo runs http templates in its agent pod): argo
// starts it, and wfguard must end it rather than carry it on with the http step ignored.
const refused = `
metadata: {name: refused}
spec:
  entrypoint: main
  templates:
  - name: main
    steps: [[{name: wait, template: long}], [{name: call, template: call}]]
  - {name: long, container: {image: alpine, command: ["true"]}}
  - {name: call, http: {url: "https://example.com"}}
`

// offloaded is a workflow as argo leaves it with node status offloading on: its nodes are in argo's
// database, status.offloadNodeStatusVersion says which version.
const offloaded = `
metadata:
  name: offloaded
  labels: {workflows.argoproj.io/phase: Running, workflows.argoproj.io/completed: "false"}
spec:
  entrypoint: main
  templates:
  - {name: main, container: {image: alpine, command: ["true"]}}
status:
  phase: Running
  startedAt: "2026-12-04T10:00:00Z"
  offloadNodeStatusVersion: fnv:1234567
`
