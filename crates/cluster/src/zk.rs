//! `Zk`: one ZooKeeper session of a cluster process, with a blocking API
//! over the `zookeeper-client` crate, rooted at the cluster's znode (the
//! path of a `zk://host:port[,host:port]/root` URL, `/accordion` by default,
//! as HBase's `zookeeper.znode.parent` is `/hbase`).
//!
//! The session is the process's membership: ephemeral nodes it creates
//! vanish when it ends, cleanly (the last handle dropped closes it) or by
//! expiry (ZooKeeper heard nothing for the session timeout). Expiry is
//! final: [`Zk::wait_expired`] returns once the client learns of it, and a
//! process that relied on the session (a region server's membership, a
//! master's leadership) must stop acting on it then. The client learns of
//! expiry only when it reaches ZooKeeper again, so a process that was
//! paused can run for a moment believing it is still a member; the
//! [`Lease`](crate::lease::Lease) covers that moment.
//!
//! A call that fails because the connection to ZooKeeper dropped (the
//! client heard nothing for 2/5 of the session timeout, as on a loaded
//! machine) is retried on the reconnected session until it succeeds or the
//! session ends, as HBase's `RecoverableZooKeeper` does: the session, not
//! one connection, is what membership rests on. Reads, `ensure`, `put`,
//! `set` and `delete` repeat as they are; a create that may have succeeded
//! before the drop checks what it finds ([`Zk::create_ephemeral`],
//! [`Zk::create_persistent`]); sequential creates and `ping` are not
//! retried (a repeat would take a second number; the lease times its own
//! round trips).
//!
//! Thread safety: `Zk` is shared (`Arc`) between threads; every call blocks
//! the calling thread on the session's own small tokio runtime (or on one
//! given by [`Zk::connect_on`], which the scale emulator shares between its
//! many sessions), never from inside a caller's runtime. Watches are one-shot, as in ZooKeeper: [`Watch::wait`] returns
//! once when the watched node or its children change, or the session ends.

use std::future::Future;
use std::str::FromStr;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use zookeeper_client::{Acl, Acls, Client, CreateMode, Error as ZkError, OneshotWatcher, Permission};

use crate::error::{ClusterError, Result};

/// Who may read a node a session creates (see `Zk::acls_for`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readers {
    /// The cluster's processes (with a secret, only they).
    Cluster,
    /// Anyone, e.g. HBase's clients; only the cluster may change it.
    Anyone,
}

static CREATOR_ALL_ANYONE_READ: [Acl; 2] =
    [Acl::new_const(Permission::ALL, "auth", ""), Acl::new_const(Permission::READ, "world", "anyone")];

/// Where a cluster's coordination lives: ZooKeeper servers and a root znode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZkUrl {
    /// `host:port[,host:port…]`, as ZooKeeper clients take it.
    pub servers: String,
    /// The cluster's root znode, e.g. `/accordion`.
    pub root: String,
    /// The cluster's secret (`--cluster-secret-file`), never part of the
    /// URL's text: with it, the session authenticates with ZooKeeper's
    /// digest scheme and every node it creates is readable and writable
    /// only by sessions that know the secret (HBase's `zookeeper.znode.acl`
    /// with SASL; here the `digest` scheme).
    pub secret: Option<Secret>,
}

/// A cluster secret; its `Debug` does not show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl Secret {
    /// Reads a secret file: its content, trimmed, at least 16 characters.
    pub fn from_file(path: &std::path::Path) -> Result<Secret> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ClusterError::BadUrl(format!("reading the cluster secret file {}: {e}", path.display())))?;
        let secret = text.trim().to_string();
        if secret.len() < 16 || secret.chars().any(char::is_whitespace) {
            return Err(ClusterError::BadUrl(format!(
                "the cluster secret file {} must hold one secret of at least 16 characters without spaces",
                path.display()
            )));
        }
        Ok(Secret(secret))
    }

    /// A secret from text (tests; binaries read a file).
    pub fn new(secret: impl Into<String>) -> Secret {
        Secret(secret.into())
    }
}

impl ZkUrl {
    /// This URL, authenticating with `secret`.
    pub fn with_secret(mut self, secret: Secret) -> ZkUrl {
        self.secret = Some(secret);
        self
    }
}

impl FromStr for ZkUrl {
    type Err = ClusterError;

    /// Parses `zk://host:port[,host:port…][/root]`.
    fn from_str(s: &str) -> Result<ZkUrl> {
        let bad = |why: &str| ClusterError::BadUrl(format!("{s:?}: {why} (expected zk://host:port[,host:port…]/root)"));
        let rest = s.strip_prefix("zk://").ok_or_else(|| bad("not a zk:// URL"))?;
        let (servers, root) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/accordion"),
        };
        if servers.is_empty() || servers.split(',').any(|h| !h.contains(':')) {
            return Err(bad("every server needs host:port"));
        }
        let root = root.trim_end_matches('/');
        if root.is_empty() {
            return Err(bad("the root znode must not be /"));
        }
        Ok(ZkUrl { servers: servers.to_string(), root: root.to_string(), secret: None })
    }
}

impl std::fmt::Display for ZkUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "zk://{}{}", self.servers, self.root)
    }
}

/// The digest scheme's user name of every session of a cluster (the secret
/// is the password).
const DIGEST_USER: &str = "accordion";

/// Whether the session ended, shared with the task that watches it.
#[derive(Default)]
struct Ended {
    flag: Mutex<bool>,
    changed: Condvar,
}

/// One ZooKeeper session (see the module doc).
pub struct Zk {
    /// The session's own runtime, if it has one (see [`Zk::connect_on`]).
    _own_runtime: Option<tokio::runtime::Runtime>,
    runtime: tokio::runtime::Handle,
    /// Taken on drop, which closes the session (see `Drop`).
    client: Option<Client>,
    url: ZkUrl,
    ended: Arc<Ended>,
}

impl std::fmt::Debug for Zk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Zk").field("url", &self.url).field("session", &self.session_id()).finish()
    }
}

impl Zk {
    /// Opens a session with `session_timeout` (ZooKeeper bounds it to its
    /// configured minimum and maximum) and makes sure the root znode exists.
    pub fn connect(url: &ZkUrl, session_timeout: Duration) -> Result<Zk> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("zookeeper")
            .enable_all()
            .build()
            .map_err(ClusterError::Runtime)?;
        let handle = runtime.handle().clone();
        Zk::connect_with(url, session_timeout, Some(runtime), handle)
    }

    /// [`connect`](Self::connect) with the session's tasks on `runtime`,
    /// which the caller keeps running for as long as the session lives
    /// (many sessions on one runtime: the scale emulator's servers). Its
    /// calls must not be made from one of `runtime`'s own threads.
    pub fn connect_on(url: &ZkUrl, session_timeout: Duration, runtime: tokio::runtime::Handle) -> Result<Zk> {
        Zk::connect_with(url, session_timeout, None, runtime)
    }

    fn connect_with(
        url: &ZkUrl,
        session_timeout: Duration,
        own: Option<tokio::runtime::Runtime>,
        runtime: tokio::runtime::Handle,
    ) -> Result<Zk> {
        let mut connector = Client::connector().with_session_timeout(session_timeout);
        if let Some(Secret(secret)) = &url.secret {
            connector = connector.with_auth("digest", format!("{DIGEST_USER}:{secret}").as_bytes());
        } else {
            tracing::warn!(
                cluster = %url,
                "no cluster secret: the cluster's znodes are world-writable (set --cluster-secret-file)"
            );
        }
        let client = runtime.block_on(connector.connect(&url.servers)).map_err(|source| ClusterError::Zk {
            op: "connect to",
            path: url.to_string(),
            source,
        })?;
        let ended = Arc::new(Ended::default());
        let mut states = client.state_watcher();
        let signal = ended.clone();
        runtime.spawn(async move {
            loop {
                let state = states.changed().await;
                if state.is_terminated() {
                    // Closed is our own doing (a shutdown); anything else
                    // (expired, auth failed) is news for the operator.
                    if state == zookeeper_client::SessionState::Closed {
                        tracing::info!(?state, "ZooKeeper session ended");
                    } else {
                        tracing::warn!(?state, "ZooKeeper session ended");
                    }
                    *signal.flag.lock().unwrap_or_else(|p| p.into_inner()) = true;
                    signal.changed.notify_all();
                    return;
                }
                tracing::debug!(?state, "ZooKeeper session state");
            }
        });
        let zk = Zk { _own_runtime: own, runtime, client: Some(client), url: url.clone(), ended };
        zk.ensure("")?;
        Ok(zk)
    }

    /// The ACL of every node this session creates: only sessions that know
    /// the cluster's secret, when it has one.
    fn acls(&self) -> Acls<'static> {
        self.acls_for(Readers::Cluster)
    }

    /// The ACL of a node read by `readers`: with a secret, the sessions
    /// that know it may do anything, and for [`Readers::Anyone`] anyone
    /// may read it too (HBase's client znodes, which clients read without
    /// credentials, as HBase keeps them world-readable under its ACLs).
    fn acls_for(&self, readers: Readers) -> Acls<'static> {
        match (self.url.secret.is_some(), readers) {
            (false, _) => Acls::anyone_all(),
            (true, Readers::Cluster) => Acls::creator_all(),
            (true, Readers::Anyone) => Acls::new(&CREATOR_ALL_ANYONE_READ),
        }
    }

    fn client(&self) -> &Client {
        self.client.as_ref().expect("the client is taken only on drop")
    }

    pub fn url(&self) -> &ZkUrl {
        &self.url
    }

    /// The session's id, as ZooKeeper's tools print it (hex).
    pub fn session_id(&self) -> String {
        format!("{:#x}", self.client().session_id().0)
    }

    /// The session timeout ZooKeeper granted.
    pub fn session_timeout(&self) -> Duration {
        self.client().session_timeout()
    }

    /// Whether the client has learned that the session ended.
    pub fn has_ended(&self) -> bool {
        *self.ended.flag.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits until the session ends (true) or `timeout` passes (false).
    pub fn wait_ended(&self, timeout: Duration) -> bool {
        let flag = self.ended.flag.lock().unwrap_or_else(|p| p.into_inner());
        let (flag, _) =
            self.ended.changed.wait_timeout_while(flag, timeout, |ended| !*ended).unwrap_or_else(|p| p.into_inner());
        *flag
    }

    /// Waits until the session ends.
    pub fn wait_expired(&self) {
        while !self.wait_ended(Duration::from_secs(3600)) {}
    }

    /// The absolute path of `rel` under the root ("" is the root).
    pub fn path(&self, rel: &str) -> String {
        if rel.is_empty() { self.url.root.clone() } else { format!("{}/{rel}", self.url.root) }
    }

    /// Runs `op` on the session's runtime, again after a dropped connection
    /// while the session lives (see the module doc). `first_try` is false
    /// on the repeats, so that a create can tell its own earlier success.
    fn retrying<T, Fut>(&self, mut op: impl FnMut(bool) -> Fut) -> std::result::Result<T, ZkError>
    where
        Fut: Future<Output = std::result::Result<T, ZkError>>,
    {
        let started = Instant::now();
        let mut first_try = true;
        loop {
            match self.runtime.block_on(op(first_try)) {
                Err(e) if connection_dropped(&e) && !self.has_ended() && started.elapsed() < RETRY_LIMIT => {
                    tracing::debug!(error = %e, "a ZooKeeper call lost its connection; retrying on the session");
                    first_try = false;
                    std::thread::sleep(RETRY_PAUSE);
                }
                other => return other,
            }
        }
    }

    fn fail(&self, op: &'static str, rel: &str) -> impl FnOnce(ZkError) -> ClusterError {
        let path = self.path(rel);
        move |source| ClusterError::Zk { op, path, source }
    }

    /// Creates `rel` and its parents as persistent nodes if missing.
    pub fn ensure(&self, rel: &str) -> Result<()> {
        self.ensure_for(rel, Readers::Cluster)
    }

    /// [`Zk::ensure`], the nodes it creates read by `readers`.
    pub fn ensure_for(&self, rel: &str, readers: Readers) -> Result<()> {
        let options = CreateMode::Persistent.with_acls(self.acls_for(readers));
        let path = self.path(rel);
        self.retrying(|_| self.client().mkdir(&path, &options)).map_err(self.fail("create", rel))
    }

    /// Creates an ephemeral node (it lives as long as this session). A
    /// repeat after a dropped connection that finds the node takes it as
    /// its own only if this session owns it.
    pub fn create_ephemeral(&self, rel: &str, data: &[u8]) -> Result<()> {
        self.create_ephemeral_for(rel, data, Readers::Cluster)
    }

    /// [`Zk::create_ephemeral`], the node read by `readers`.
    pub fn create_ephemeral_for(&self, rel: &str, data: &[u8], readers: Readers) -> Result<()> {
        let options = CreateMode::Ephemeral.with_acls(self.acls_for(readers));
        let path = self.path(rel);
        let client = self.client();
        let session = client.session_id();
        self.retrying(|first_try| {
            let (path, options) = (&path, &options);
            async move {
                match client.create(path, data, options).await {
                    Err(ZkError::NodeExists) if !first_try => match client.check_stat(path).await? {
                        Some(stat) if stat.ephemeral_owner == session.0 => Ok(()),
                        _ => Err(ZkError::NodeExists),
                    },
                    other => other.map(|_| ()),
                }
            }
        })
        .map_err(self.fail("create", rel))
    }

    /// Creates an ephemeral sequential node `rel_prefix` + a sequence number;
    /// returns its name (the last path component).
    pub fn create_ephemeral_sequential(&self, rel_prefix: &str, data: &[u8]) -> Result<String> {
        let options = CreateMode::EphemeralSequential.with_acls(self.acls());
        let (_, sequence) = self
            .runtime
            .block_on(self.client().create(&self.path(rel_prefix), data, &options))
            .map_err(self.fail("create", rel_prefix))?;
        let name = rel_prefix.rsplit('/').next().unwrap_or(rel_prefix);
        Ok(format!("{name}{sequence}"))
    }

    /// The next number of ZooKeeper's sequence under `rel_parent`: a
    /// persistent sequential child is created and deleted again (the
    /// parent's counter only grows), so every caller in the cluster gets a
    /// number no one else got.
    pub fn next_sequence(&self, rel_parent: &str) -> Result<u64> {
        self.ensure(rel_parent)?;
        let options = CreateMode::PersistentSequential.with_acls(self.acls());
        let prefix = format!("{rel_parent}/n-");
        let (_, sequence) = self
            .runtime
            .block_on(self.client().create(&self.path(&prefix), &[], &options))
            .map_err(self.fail("create", &prefix))?;
        let name = format!("{prefix}{sequence}");
        self.delete(&name)?;
        u64::try_from(sequence.into_i64()).map_err(|_| ClusterError::Malformed {
            what: "sequence number",
            path: self.path(&name),
            reason: "negative".into(),
        })
    }

    /// The children of `rel`, sorted by name.
    pub fn children(&self, rel: &str) -> Result<Vec<String>> {
        let path = self.path(rel);
        let mut names = self.retrying(|_| self.client().list_children(&path)).map_err(self.fail("list", rel))?;
        names.sort();
        Ok(names)
    }

    /// The children of `rel`, sorted, and a watch that fires when they change.
    pub fn watch_children(&self, rel: &str) -> Result<(Vec<String>, Watch)> {
        let path = self.path(rel);
        let (mut names, watcher) =
            self.retrying(|_| self.client().list_and_watch_children(&path)).map_err(self.fail("watch", rel))?;
        names.sort();
        Ok((names, self.watch(watcher)))
    }

    /// Whether `rel` exists, and a watch that fires when it is created,
    /// changed or deleted.
    pub fn watch_exists(&self, rel: &str) -> Result<(bool, Watch)> {
        let path = self.path(rel);
        let (stat, watcher) =
            self.retrying(|_| self.client().check_and_watch_stat(&path)).map_err(self.fail("watch", rel))?;
        Ok((stat.is_some(), self.watch(watcher)))
    }

    /// The data of `rel`, or `None` if it does not exist.
    pub fn get(&self, rel: &str) -> Result<Option<Vec<u8>>> {
        let path = self.path(rel);
        match self.retrying(|_| self.client().get_data(&path)) {
            Ok((data, _)) => Ok(Some(data)),
            Err(ZkError::NoNode) => Ok(None),
            Err(e) => Err(self.fail("read", rel)(e)),
        }
    }

    /// Creates persistent node `rel` (its parent must exist) holding
    /// `data`; false if it existed already (its data is left as it was).
    /// A repeat after a dropped connection that finds the node holding
    /// `data` cannot tell whether its first try made it: it says false,
    /// which every caller reads as "the node holds what it holds".
    pub fn create_persistent(&self, rel: &str, data: &[u8]) -> Result<bool> {
        self.create_persistent_for(rel, data, Readers::Cluster)
    }

    /// [`Zk::create_persistent`], the node read by `readers`.
    pub fn create_persistent_for(&self, rel: &str, data: &[u8], readers: Readers) -> Result<bool> {
        let options = CreateMode::Persistent.with_acls(self.acls_for(readers));
        let path = self.path(rel);
        match self.retrying(|_| self.client().create(&path, data, &options)) {
            Ok(_) => Ok(true),
            Err(ZkError::NodeExists) => Ok(false),
            Err(e) => Err(self.fail("create", rel)(e)),
        }
    }

    /// Writes `data` to persistent node `rel`, creating it if missing (its
    /// parent must exist).
    pub fn put(&self, rel: &str, data: &[u8]) -> Result<()> {
        self.put_for(rel, data, Readers::Cluster)
    }

    /// [`Zk::put`], a node it creates read by `readers`.
    pub fn put_for(&self, rel: &str, data: &[u8], readers: Readers) -> Result<()> {
        loop {
            let path = self.path(rel);
            match self.retrying(|_| self.client().set_data(&path, data, None)) {
                Ok(_) => return Ok(()),
                Err(ZkError::NoNode) => {
                    if self.create_persistent_for(rel, data, readers)? {
                        return Ok(());
                    }
                    // Created by someone else meanwhile: write over it.
                }
                Err(e) => return Err(self.fail("write", rel)(e)),
            }
        }
    }

    /// Replaces the data of existing node `rel`.
    pub fn set(&self, rel: &str, data: &[u8]) -> Result<()> {
        let path = self.path(rel);
        self.retrying(|_| self.client().set_data(&path, data, None)).map_err(self.fail("write", rel))?;
        Ok(())
    }

    /// Deletes `rel` if it exists.
    pub fn delete(&self, rel: &str) -> Result<()> {
        let path = self.path(rel);
        match self.retrying(|_| self.client().delete(&path, None)) {
            Ok(()) | Err(ZkError::NoNode) => Ok(()),
            Err(e) => Err(self.fail("delete", rel)(e)),
        }
    }

    /// A round trip to ZooKeeper that proves the session alive (a `sync` of
    /// the root).
    pub fn ping(&self) -> Result<()> {
        self.runtime.block_on(self.client().sync(&self.url.root)).map_err(self.fail("sync", ""))
    }

    fn watch(&self, watcher: OneshotWatcher) -> Watch {
        let (tx, rx) = mpsc::channel();
        self.runtime.spawn(async move {
            let event = watcher.changed().await;
            let _ = tx.send(event.path);
        });
        Watch { fired: rx }
    }
}

/// How long a call is repeated after dropped connections at most (the
/// session usually ends, or the connection comes back, well before).
const RETRY_LIMIT: Duration = Duration::from_secs(60);

/// The pause between repeats.
const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// Whether `e` says the connection dropped under a call, not that ZooKeeper
/// answered it: the client's own connection errors (`ConnectionLoss`, and
/// its I/O and "no response from connection" errors, which it reports as
/// custom errors).
fn connection_dropped(e: &ZkError) -> bool {
    matches!(e, ZkError::ConnectionLoss | ZkError::Custom(_))
}

impl Drop for Zk {
    /// Closes the session, so that its ephemeral nodes go at once rather
    /// than after the session timeout: dropping the last client handle
    /// sends ZooKeeper a CloseSession, which the session's task (on this
    /// runtime) must be given a moment to deliver.
    fn drop(&mut self) {
        drop(self.client.take());
        self.wait_ended(Duration::from_secs(2));
    }
}

/// A one-shot ZooKeeper watch.
pub struct Watch {
    fired: mpsc::Receiver<String>,
}

impl Watch {
    /// Waits up to `timeout` for the watch to fire; true if it did (or the
    /// session ended, which fires every watch).
    pub fn wait(&self, timeout: Duration) -> bool {
        !matches!(self.fired.recv_timeout(timeout), Err(mpsc::RecvTimeoutError::Timeout))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_as_zookeeper_clients_take_them() {
        let u: ZkUrl = "zk://127.0.0.1:2181,h2:2182/acc/one".parse().expect("valid");
        assert_eq!(u, ZkUrl { servers: "127.0.0.1:2181,h2:2182".into(), root: "/acc/one".into(), secret: None });
        assert_eq!(u.to_string(), "zk://127.0.0.1:2181,h2:2182/acc/one");
        let d: ZkUrl = "zk://h:1".parse().expect("valid");
        assert_eq!(d.root, "/accordion");
        for bad in ["http://h:1/x", "zk:///x", "zk://h/x", "zk://h:1/"] {
            assert!(bad.parse::<ZkUrl>().is_err(), "{bad}");
        }
    }
}
