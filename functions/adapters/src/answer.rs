//! How Argo CD's JSON answers become values ([`Answer`]).
//!
//! Argo CD writes `null` for empty lists and maps, which our types read as absent: every answer
//! goes through [`medic_core::app::strip_nulls`] first. Most answers are one app, read whole. The
//! app list is not: at 50,000 apps its field-masked JSON is 31 MB and its `serde_json::Value`
//! several times that. [`ListedApps`] is decoded while the body arrives ([`ChunkReader`]), one
//! item's `Value` at a time, and keeps only the typed apps.

use std::io::Read;

use medic_core::app::{Application, strip_nulls};
use serde::Deserialize;
use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// A JSON answer from Argo CD.
pub(crate) trait Answer: Sized + Send + 'static {
    /// Decoded while the body arrives, on a blocking thread, instead of after all of it has.
    const STREAMED: bool;
    fn from_json<R: Read>(reader: R) -> serde_json::Result<Self>;
}

/// Answers read whole: a `Value`, its nulls stripped, then the type.
macro_rules! whole_answers {
    ($($t:ty),* $(,)?) => {$(
        impl $crate::answer::Answer for $t {
            const STREAMED: bool = false;
            fn from_json<R: std::io::Read>(reader: R) -> serde_json::Result<Self> {
                let mut value: serde_json::Value = serde_json::from_reader(reader)?;
                medic_core::app::strip_nulls(&mut value);
                serde_json::from_value(value)
            }
        }
    )*};
}

// For the client's own wire types too, where they are declared (so this module names none of
// them: the two modules import each other no more).
pub(crate) use whole_answers;

whole_answers!(Application, serde_json::Value, medic_core::app::RevisionMetadata);

/// `GET /api/v1/applications`: the `items`, each stripped and typed as it is read; the list's
/// `metadata` is skipped.
#[derive(Debug, Default)]
pub(crate) struct ListedApps(pub Vec<Application>);

impl Answer for ListedApps {
    const STREAMED: bool = true;
    fn from_json<R: Read>(reader: R) -> serde_json::Result<Self> {
        // Not shrunk to fit: that copy would briefly hold the list twice, above the peak of the
        // growth itself (heaptrack, 50,000 apps).
        serde_json::from_reader(reader)
    }
}

impl<'de> Deserialize<'de> for ListedApps {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ListVisitor)
    }
}

struct ListVisitor;

impl<'de> Visitor<'de> for ListVisitor {
    type Value = ListedApps;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an ApplicationList")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ListedApps, A::Error> {
        let mut apps = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            if key == "items" {
                // `null` for an empty list, as Argo CD writes it.
                apps = map.next_value::<Option<Items>>()?.map(|i| i.0).unwrap_or_default();
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(ListedApps(apps))
    }
}

/// The `items` array, one app's `Value` at a time.
struct Items(Vec<Application>);

impl<'de> Deserialize<'de> for Items {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_seq(ItemsVisitor)
    }
}

struct ItemsVisitor;

impl<'de> Visitor<'de> for ItemsVisitor {
    type Value = Items;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of Applications")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Items, A::Error> {
        let mut apps = Vec::new();
        while let Some(mut item) = seq.next_element::<serde_json::Value>()? {
            strip_nulls(&mut item);
            apps.push(Application::deserialize(item).map_err(de::Error::custom)?);
        }
        Ok(Items(apps))
    }
}

/// The body as it arrives, for a decoder on a blocking thread: chunks handed over a bounded
/// channel, so at most a few of them are held at once.
pub(crate) struct ChunkReader {
    chunks: tokio::sync::mpsc::Receiver<bytes::Bytes>,
    current: bytes::Bytes,
}

impl ChunkReader {
    pub(crate) fn new(chunks: tokio::sync::mpsc::Receiver<bytes::Bytes>) -> Self {
        Self { chunks, current: bytes::Bytes::new() }
    }
}

impl Read for ChunkReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.current.is_empty() {
            match self.chunks.blocking_recv() {
                Some(chunk) => self.current = chunk,
                // The sender is gone: the body ended (or failed, which the sender reports).
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current[..n]);
        self.current = self.current.slice(n..);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(json: &str) -> Vec<String> {
        ListedApps::from_json(json.as_bytes()).unwrap().0.iter().map(|a| a.metadata.name.clone()).collect()
    }

    #[test]
    fn a_list_is_read_item_by_item_with_argo_cd_s_nulls_as_absent() {
        let json = r#"{"metadata":{"resourceVersion":"7"},"items":[
            {"metadata":{"name":"a","namespace":"argocd","labels":null,"annotations":null},"spec":{"project":"p","sources":null},
             "status":{"conditions":null,"sync":{"status":"Synced"}}},
            {"metadata":{"name":"b","namespace":"argocd"},"spec":{"project":"p"},"status":{}}]}"#;
        assert_eq!(listed(json), ["a", "b"]);
        let apps = ListedApps::from_json(json.as_bytes()).unwrap().0;
        assert!(apps[0].metadata.labels.is_empty() && apps[0].status.conditions.is_empty());
    }

    #[test]
    fn an_empty_list_is_null_or_absent() {
        assert!(listed(r#"{"items":null,"metadata":{}}"#).is_empty());
        assert!(listed(r#"{"metadata":{}}"#).is_empty());
    }

    #[test]
    fn a_malformed_item_is_an_error_not_a_shorter_list() {
        assert!(ListedApps::from_json(r#"{"items":[{"metadata":{"name":3}}]}"#.as_bytes()).is_err());
        assert!(ListedApps::from_json(r#"{"items":[{"metadata":{"name":"a"}}"#.as_bytes()).is_err(), "cut short");
    }

    #[test]
    fn the_chunk_reader_gives_the_body_across_chunk_boundaries() {
        let (tx, rx) = tokio::sync::mpsc::channel(2);
        let body = r#"{"items":[{"metadata":{"name":"split-across"}}]}"#;
        let writer = std::thread::spawn(move || {
            for piece in body.as_bytes().chunks(7) {
                tx.blocking_send(bytes::Bytes::copy_from_slice(piece)).unwrap();
            }
        });
        assert_eq!(ListedApps::from_json(ChunkReader::new(rx)).unwrap().0[0].metadata.name, "split-across");
        writer.join().unwrap();
    }
}
