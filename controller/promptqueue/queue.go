package promptqueue

import (
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// DeferredPatience is how long a deferred key waits behind prompt ones before it is overdue: then one key
// in every PromptShare+1 handed out is the oldest deferred one, so a steady stream of prompt keys never
// starves a timeout check or a coalesced write, while prompt keys keep most workers under load.
const (
	DeferredPatience = time.Second
	PromptShare      = 3
)

// Config builds a Queue; Name and MetricsProvider are the workqueue's own (client-go's queue metrics).
type Config struct {
	Name            string
	MetricsProvider workqueue.MetricsProvider
	Clock           clock.WithTicker
	RateLimiter     workqueue.TypedRateLimiter[string]
	Metrics         *Metrics
}

// Queue is a rate-limiting workqueue with two classes of keys. Add (an informer event or another
// component asking for a pass now) makes a key prompt; AddAfter and AddRateLimited (a coalescing window, a
// requeue, a retry) make it deferred once its delay ends. Workers get prompt keys first, in the order
// added, except that an overdue deferred key takes every (PromptShare+1)th turn. Everything else is
// client-go's queue: a key is handed to one worker at a time, and a key added while processed comes back
// after Done.
type Queue struct {
	workqueue.TypedRateLimitingInterface[string]
	order *order
}

// New builds the queue.
func New(cfg Config) *Queue {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	o := &order{clock: cfg.Clock, metrics: cfg.Metrics, marked: map[string]bool{}, pushed: map[string]time.Time{}}
	base := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{
		Name: cfg.Name, MetricsProvider: cfg.MetricsProvider, Clock: cfg.Clock, Queue: o})
	delaying := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{
		Name: cfg.Name, MetricsProvider: cfg.MetricsProvider, Clock: cfg.Clock, Queue: base})
	return &Queue{
		TypedRateLimitingInterface: workqueue.NewTypedRateLimitingQueueWithConfig(cfg.RateLimiter,
			workqueue.TypedRateLimitingQueueConfig[string]{Name: cfg.Name, MetricsProvider: cfg.MetricsProvider, Clock: cfg.Clock, DelayingQueue: delaying}),
		order: o,
	}
}

// Add queues key as prompt. The delaying queue adds through the base queue, not through here, which is
// what keeps its keys deferred.
func (q *Queue) Add(key string) {
	q.order.mark(key)
	q.TypedRateLimitingInterface.Add(key)
}

// order is the storage behind client-go's queue (workqueue.Queue): two FIFOs. Its methods run under the
// queue's lock, except mark, hence its own mutex.
type order struct {
	mu       sync.Mutex
	clock    clock.PassiveClock
	metrics  *Metrics
	prompt   []string
	deferred []string
	// marked keys were last added by Add: their next Push or Touch files them prompt.
	marked map[string]bool
	pushed map[string]time.Time
	// promptTurns counts prompt keys handed out since a deferred one.
	promptTurns int
}

func (o *order) mark(key string) {
	o.mu.Lock()
	o.marked[key] = true
	o.mu.Unlock()
}

// Push files a key that is not queued: prompt if Add asked for it since it was last handed out.
func (o *order) Push(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.pushed[key] = o.clock.Now()
	if o.marked[key] {
		delete(o.marked, key)
		o.prompt = append(o.prompt, key)
		return
	}
	o.deferred = append(o.deferred, key)
}

// Touch moves a queued deferred key to the prompt FIFO when Add asked for it again.
func (o *order) Touch(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.marked[key] {
		return
	}
	delete(o.marked, key)
	if i := slices.Index(o.deferred, key); i >= 0 {
		o.deferred = slices.Delete(o.deferred, i, i+1)
		o.prompt = append(o.prompt, key)
	}
}

func (o *order) Len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.prompt) + len(o.deferred)
}

// Pop hands out the oldest prompt key, unless there is none or the oldest deferred key is overdue and
// PromptShare prompt keys went since the last deferred one. client-go calls it only when Len is not 0.
func (o *order) Pop() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.clock.Now()
	overdue := len(o.deferred) > 0 && now.Sub(o.pushed[o.deferred[0]]) >= DeferredPatience
	var key, class string
	if len(o.prompt) > 0 && !(overdue && o.promptTurns >= PromptShare) {
		key, o.prompt = pop(o.prompt)
		class = classPrompt
		o.promptTurns++
	} else {
		key, o.deferred = pop(o.deferred)
		class = classDeferred
		o.promptTurns = 0
	}
	o.metrics.observeWait(class, now.Sub(o.pushed[key]))
	delete(o.pushed, key)
	return key
}

// pop takes the head of a FIFO, clearing its slot so the backing array holds no stale key.
func pop(fifo []string) (string, []string) {
	key := fifo[0]
	fifo[0] = ""
	return key, fifo[1:]
}
