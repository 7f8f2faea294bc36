//! A batch cut into parts written at the same time (claims being settled apart from fresh
//! requests; a batch tenant by tenant), and the parts' answers put back in the requests' order.

use std::collections::HashMap;

use doorman_domain::StorageError;

use super::{Write, Written};

/// `batch` cut into parts by `key`, each written by `write` at the same time as the others;
/// one answer per request, in the requests' order (a part that failed answers its error for
/// each of its requests).
pub(super) async fn in_parts<'a, K, F, Fut>(
    batch: &[&'a Write],
    key: impl Fn(&Write) -> K,
    write: F,
) -> Vec<Written>
where
    K: Eq + std::hash::Hash + Copy,
    F: Fn(Vec<&'a Write>) -> Fut,
    Fut: std::future::Future<Output = Result<Vec<Written>, StorageError>>,
{
    let mut parts: Vec<(K, Vec<&'a Write>)> = Vec::new();
    for write in batch.iter().copied() {
        let k = key(write);
        match parts.iter_mut().find(|(part, _)| *part == k) {
            Some((_, part)) => part.push(write),
            None => parts.push((k, vec![write])),
        }
    }
    let written = futures_util::future::join_all(parts.iter().map(|(_, part)| {
        let requests = part.len();
        let answered = write(part.clone());
        async move { answer_each(answered.await, requests) }
    }))
    .await;
    let mut answers: HashMap<K, std::vec::IntoIter<Written>> =
        parts.iter().map(|(k, _)| *k).zip(written.into_iter().map(Vec::into_iter)).collect();
    batch
        .iter()
        .map(|write| {
            answers.get_mut(&key(write)).and_then(Iterator::next).unwrap_or_else(|| {
                Written::Refused(StorageError::Unexpected("a request lost its answer".into()))
            })
        })
        .collect()
}

/// A part's answers, or its error as each request's.
pub(super) fn answer_each(written: Result<Vec<Written>, StorageError>, requests: usize) -> Vec<Written> {
    written.unwrap_or_else(|error| (0..requests).map(|_| Written::Refused(error.clone())).collect())
}
