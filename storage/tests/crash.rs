//! Kill -9 at random moments: every acknowledged write must survive and the store must reopen.
//!
//! Rounds default to 20; set `K1S_CRASH_ROUNDS` for a longer manual run.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use k1s_storage::{Backend, ListOptions, LocalStore, Revision, Store, StoreConfig};

/// A small xorshift generator, seeded from the clock and printed so a failure can be replayed.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[derive(Default)]
struct Acked {
    /// Key -> (value length, whether a delete may follow).
    created: BTreeMap<String, (usize, bool)>,
    deleted: BTreeSet<String>,
    counters: BTreeMap<String, u64>,
    max_revision: u64,
}

fn parse_acks(lines: &[String], acked: &mut Acked) {
    for line in lines {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.as_slice() {
            ["CREATE", key, rev, len, doomed] => {
                acked
                    .created
                    .insert(key.to_string(), (len.parse().unwrap(), *doomed == "true"));
                acked.max_revision = acked.max_revision.max(rev.parse().unwrap());
            }
            ["DELETE", key, rev] => {
                acked.deleted.insert(key.to_string());
                acked.max_revision = acked.max_revision.max(rev.parse().unwrap());
            }
            ["COUNT", key, n, rev] => {
                let n: u64 = n.parse().unwrap();
                let e = acked.counters.entry(key.to_string()).or_default();
                *e = (*e).max(n);
                acked.max_revision = acked.max_revision.max(rev.parse().unwrap());
            }
            ["OPEN", _] => {}
            // A line cut by the kill is not an acknowledgement.
            _ => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_sigkill() {
    kill_rounds(false).await;
}

/// The same on a store created with sled's compression (`k1s server --store-compression`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_sigkill_with_compression() {
    kill_rounds(true).await;
}

async fn kill_rounds(compressed: bool) {
    let rounds: u32 = std::env::var("K1S_CRASH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(20);
    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    println!("crash test seed {seed}");
    let mut rng = Rng(seed);
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    if compressed {
        // Created compressed here; the writer and every reopen keep the store's own setting.
        let mut config = StoreConfig::new(Backend::Disk(store_dir.clone()));
        config.compress_new_store = true;
        LocalStore::open(config).unwrap().close();
        let conf = std::fs::read(store_dir.join("sled/conf")).unwrap();
        assert!(String::from_utf8_lossy(&conf).contains("use_compression: true"));
    }
    let mut acked = Acked::default();
    let mut last_revision = Revision(0);
    let mut total_acks = 0;
    for round in 0..rounds {
        let mut child = Command::new(env!("CARGO_BIN_EXE_k1s-storage-crash-writer"))
            .arg(&store_dir)
            .arg(round.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let reader = std::thread::spawn(move || {
            BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .collect::<Vec<String>>()
        });
        // Let it open the store and write for a random while, then kill -9.
        std::thread::sleep(Duration::from_millis(60 + rng.next() % 400));
        child.kill().unwrap();
        child.wait().unwrap();
        let lines = reader.join().unwrap();
        total_acks += lines.len();
        parse_acks(&lines, &mut acked);

        let store = LocalStore::open(StoreConfig::new(Backend::Disk(store_dir.clone())))
            .unwrap_or_else(|e| panic!("round {round}: store did not reopen: {e}"));
        let rev = store.current_revision();
        assert!(
            rev >= last_revision,
            "round {round}: revision went back from {last_revision} to {rev}"
        );
        assert!(
            rev.0 >= acked.max_revision,
            "round {round}: revision {rev} < acked {}",
            acked.max_revision
        );
        last_revision = rev;
        let all = store.list("/crash/", ListOptions::default()).await.unwrap();
        let present: BTreeMap<&str, &[u8]> = all
            .items
            .iter()
            .map(|kv| (kv.key.as_str(), &kv.value[..]))
            .collect();
        for (key, (len, doomed)) in &acked.created {
            if acked.deleted.contains(key) {
                assert!(
                    !present.contains_key(key.as_str()),
                    "round {round}: deleted {key} is back"
                );
                continue;
            }
            let Some(value) = present.get(key.as_str()) else {
                if *doomed {
                    continue; // its delete was durable, only the ack was cut off
                }
                panic!("round {round} (seed {seed}): acknowledged {key} lost");
            };
            assert_eq!(
                value.len(),
                *len,
                "round {round}: {key} has the wrong length"
            );
            assert!(
                value
                    .iter()
                    .zip(key.as_bytes().iter().cycle())
                    .all(|(a, b)| a == b)
            );
        }
        for (key, n) in &acked.counters {
            let got: u64 = std::str::from_utf8(present.get(key.as_str()).unwrap())
                .unwrap()
                .parse()
                .unwrap();
            assert!(
                got >= *n,
                "round {round}: counter {key} went back from {n} to {got}"
            );
        }
        store.close();
    }
    println!(
        "{rounds} rounds, {total_acks} acknowledged writes checked, final revision {last_revision}"
    );
    assert!(
        total_acks > rounds as usize,
        "the writer hardly wrote anything"
    );
}
