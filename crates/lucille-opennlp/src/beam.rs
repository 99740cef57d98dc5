//! OpenNLP's BeamSearch over `java.util.PriorityQueue`. The queue's binary heap is reproduced
//! step for step (sift up on add, sift down on remove), because which of two sequences of equal
//! score survives the beam depends on it, and so does the result.

use crate::java::double_compare;

/// A partial sequence: its outcomes (indices into the model's outcomes), their probabilities,
/// and the sum of their logs.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sequence {
    pub outcomes: Vec<usize>,
    pub probs: Vec<f64>,
    pub score: f64,
}

impl Sequence {
    pub(crate) fn extend(&self, outcome: usize, p: f64) -> Sequence {
        let mut outcomes = Vec::with_capacity(self.outcomes.len() + 1);
        outcomes.extend_from_slice(&self.outcomes);
        outcomes.push(outcome);
        let mut probs = Vec::with_capacity(self.probs.len() + 1);
        probs.extend_from_slice(&self.probs);
        probs.push(p);
        Sequence {
            outcomes,
            probs,
            score: self.score + p.ln(),
        }
    }

    /// Sequence.compareTo: the higher score first.
    fn compare(&self, other: &Sequence) -> std::cmp::Ordering {
        double_compare(other.score, self.score)
    }
}

/// `java.util.PriorityQueue<Sequence>` with its exact heap order.
#[derive(Debug, Default)]
pub(crate) struct JavaPriorityQueue {
    heap: Vec<Sequence>,
}

impl JavaPriorityQueue {
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }

    pub(crate) fn clear(&mut self) {
        self.heap.clear();
    }

    /// `offer`: siftUp.
    pub(crate) fn add(&mut self, x: Sequence) {
        let mut k = self.heap.len();
        self.heap.push(x);
        while k > 0 {
            let parent = (k - 1) >> 1;
            if self.heap[k].compare(&self.heap[parent]).is_ge() {
                break;
            }
            self.heap.swap(k, parent);
            k = parent;
        }
    }

    /// `poll`: the head, then the last element sifted down from the root.
    pub(crate) fn remove(&mut self) -> Option<Sequence> {
        let n = self.heap.len().checked_sub(1)?;
        self.heap.swap(0, n);
        let result = self.heap.pop();
        let n = self.heap.len();
        let mut k = 0;
        let half = n >> 1;
        while k < half {
            let mut child = 2 * k + 1;
            let right = child + 1;
            if right < n && self.heap[child].compare(&self.heap[right]).is_gt() {
                child = right;
            }
            if self.heap[k].compare(&self.heap[child]).is_le() {
                break;
            }
            self.heap.swap(k, child);
            k = child;
        }
        result
    }
}
