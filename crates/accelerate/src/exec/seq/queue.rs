//! A queue bounded by bytes between two threads of a sequence's pipeline
//! (the thesis' pipeline parallelism, §3.2.2): a stream's iterator pulled
//! ahead of the chunk being computed, and results handed to `stream_out`'s
//! consumer while the next chunk computes. A full queue blocks its
//! producer, so that a slow consumer cannot make memory grow; a queue
//! always admits one item, so that an item larger than the bound still
//! passes.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};

struct State<T> {
    items: VecDeque<(T, usize)>,
    bytes: usize,
    /// The producer is done: no more items will come.
    closed: bool,
    /// The consumer is gone: the producer should stop.
    cancelled: bool,
}

pub(super) struct Queue<T> {
    state: Mutex<State<T>>,
    changed: Condvar,
    cap_bytes: usize,
}

impl<T> Queue<T> {
    pub fn new(cap_bytes: usize) -> Queue<T> {
        Queue {
            state: Mutex::new(State { items: VecDeque::new(), bytes: 0, closed: false, cancelled: false }),
            changed: Condvar::new(),
            cap_bytes,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // a thread that panicked holding the lock left the queue consistent
        // (every change is one statement): go on with it
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds an item of `bytes` bytes, waiting while the queue is full;
    /// false if the consumer is gone.
    pub fn push(&self, item: T, bytes: usize) -> bool {
        let mut s = self.lock();
        while !s.cancelled && !s.items.is_empty() && s.bytes + bytes > self.cap_bytes {
            s = self.changed.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        if s.cancelled {
            return false;
        }
        s.bytes += bytes;
        s.items.push_back((item, bytes));
        self.changed.notify_all();
        true
    }

    /// The next item, waiting for one; `None` once the producer is done
    /// and the queue empty.
    pub fn pop(&self) -> Option<T> {
        let mut s = self.lock();
        loop {
            if let Some((item, bytes)) = s.items.pop_front() {
                s.bytes -= bytes;
                self.changed.notify_all();
                return Some(item);
            }
            if s.closed {
                return None;
            }
            s = self.changed.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The producer is done.
    pub fn close(&self) {
        self.lock().closed = true;
        self.changed.notify_all();
    }

    /// The consumer is gone: a waiting producer returns, and the items
    /// held are dropped.
    pub fn cancel(&self) {
        let mut s = self.lock();
        s.cancelled = true;
        s.items.clear();
        s.bytes = 0;
        self.changed.notify_all();
    }

    /// The bytes held now.
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_full_queue_blocks_its_producer_until_the_consumer_takes() {
        let q = Arc::new(Queue::new(10));
        let p = {
            let q = q.clone();
            std::thread::spawn(move || {
                for i in 0..100 {
                    assert!(q.push(i, 4));
                }
                q.close();
            })
        };
        let mut got = Vec::new();
        while let Some(x) = q.pop() {
            assert!(q.bytes() <= 12, "held {} bytes", q.bytes());
            got.push(x);
        }
        p.join().unwrap();
        assert_eq!(got, (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn cancelling_releases_a_waiting_producer() {
        let q = Arc::new(Queue::new(1));
        let p = {
            let q = q.clone();
            std::thread::spawn(move || (0..10).take_while(|&i| q.push(i, 1)).count())
        };
        assert_eq!(q.pop(), Some(0));
        q.cancel();
        assert!(p.join().unwrap() < 10);
    }
}
