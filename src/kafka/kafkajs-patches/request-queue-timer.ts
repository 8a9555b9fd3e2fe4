/**
 * kafkajs patch 3 — the request queue's timer loop (CPU).
 *
 * In kafkajs 2.2.4, after the first response, every socket's RequestQueue reschedules
 * `checkPendingRequests` every ~1 ms forever, even with nothing pending
 * (`src/network/requestQueue/index.js:306-322`: with an empty queue and no throttle the delay is
 * negative, so Node runs it after 1 ms; docs/kafkajs-notes.md §5 "Timer load per socket"; kafkajs issues
 * #1556, #1604, #1704; fix PRs #1572/#1667, open). Measured: one idle queue makes 901 checks a
 * second, against 1 on kafkajs-fixes; with one transactional producer per task that is
 * thousands of wake-ups per second. The patched method schedules a check only when requests are
 * pending or the broker throttles; a response or a new request checks the queue anyway.
 *
 * The check is by identity: the prototype holds the method every queue calls.
 */
import { type KafkajsPatch, kafkajsPrototype, patchNotInPlace } from './kafkajs-patch.js';

interface RequestQueueLike {
  pending: unknown[];
  throttledUntil: number;
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  checkPendingRequests(): void;
}
interface RequestQueuePrototype {
  scheduleCheckPendingRequests(this: RequestQueueLike): void;
}

const CHECK_PENDING_REQUESTS_INTERVAL = 10; // kafkajs' own constant (requestQueue/index.js:12)

function scheduleCheckPendingRequests(this: RequestQueueLike): void {
  if (this.throttleCheckTimeoutId) return;
  const throttledFor = this.throttledUntil - Date.now();
  if (this.pending.length === 0 && throttledFor <= 0) return; // nothing to check: no 1 ms loop
  const delay = this.pending.length > 0 && throttledFor <= 0 ? CHECK_PENDING_REQUESTS_INTERVAL : Math.max(throttledFor, 0);
  this.throttleCheckTimeoutId = setTimeout(() => {
    this.throttleCheckTimeoutId = null;
    this.checkPendingRequests();
  }, delay);
}

function requestQueuePrototype(): RequestQueuePrototype {
  return kafkajsPrototype('kafkajs/src/network/requestQueue');
}

export const requestQueueTimerPatch: KafkajsPatch = {
  name: 'request-queue-timer',
  install: () => {
    requestQueuePrototype().scheduleCheckPendingRequests = scheduleCheckPendingRequests;
  },
  check: () => {
    if (requestQueuePrototype().scheduleCheckPendingRequests !== scheduleCheckPendingRequests) {
      throw patchNotInPlace('request-queue-timer', 'every kafkajs socket wakes up about every millisecond, pending requests or not');
    }
  },
};
