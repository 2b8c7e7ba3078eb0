//! A proxy in front of a service the bot uses (the Docker engine's Unix socket, PostgreSQL's
//! TCP port) that a test can cut — every open connection dropped, new ones refused, as when the
//! service goes away or restarts — and restore.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::task::JoinHandle;

type Tasks = Arc<Mutex<Vec<JoinHandle<()>>>>;

enum Link {
    Tcp { port: u16, upstream: String },
    Unix { path: PathBuf, upstream: PathBuf },
}

pub struct Cuttable {
    link: Link,
    tasks: Tasks,
    accept: Option<JoinHandle<()>>,
}

/// Pipes `client` to what `connect` reaches, until either side closes or the proxy is cut.
fn pipe<C, S, F>(tasks: &Tasks, mut client: C, connect: F)
where
    C: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    F: Future<Output = std::io::Result<S>> + Send + 'static,
{
    let task = tokio::spawn(async move {
        if let Ok(mut server) = connect.await {
            let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
        }
    });
    tasks.lock().unwrap().push(task);
}

impl Cuttable {
    /// A TCP proxy on a free local port in front of `upstream` (`host:port`).
    pub async fn tcp(upstream: &str) -> Cuttable {
        let port = super::free_port();
        let link = Link::Tcp {
            port,
            upstream: upstream.to_owned(),
        };
        Self::open(link).await
    }

    /// A Unix-socket proxy at `path` in front of the socket `upstream`.
    pub async fn unix(path: &Path, upstream: &Path) -> Cuttable {
        let link = Link::Unix {
            path: path.to_owned(),
            upstream: upstream.to_owned(),
        };
        Self::open(link).await
    }

    async fn open(link: Link) -> Cuttable {
        let mut c = Cuttable {
            link,
            tasks: Arc::default(),
            accept: None,
        };
        c.restore().await;
        c
    }

    /// The TCP proxy's port.
    pub fn port(&self) -> u16 {
        match &self.link {
            Link::Tcp { port, .. } => *port,
            Link::Unix { .. } => panic!("a Unix-socket proxy has no port"),
        }
    }

    /// Listens again: new connections reach the service.
    pub async fn restore(&mut self) {
        let tasks = self.tasks.clone();
        self.accept = Some(match &self.link {
            Link::Tcp { port, upstream } => {
                let listener = TcpListener::bind(("127.0.0.1", *port)).await.unwrap();
                let upstream = upstream.clone();
                tokio::spawn(async move {
                    while let Ok((client, _)) = listener.accept().await {
                        pipe(&tasks, client, TcpStream::connect(upstream.clone()));
                    }
                })
            }
            Link::Unix { path, upstream } => {
                let _ = std::fs::remove_file(path);
                let listener = UnixListener::bind(path).unwrap();
                let upstream = upstream.clone();
                tokio::spawn(async move {
                    while let Ok((client, _)) = listener.accept().await {
                        pipe(&tasks, client, UnixStream::connect(upstream.clone()));
                    }
                })
            }
        });
    }

    /// The service is gone: every open connection drops and new ones are refused.
    pub fn cut(&mut self) {
        if let Some(a) = self.accept.take() {
            a.abort();
        }
        for t in self.tasks.lock().unwrap().drain(..) {
            t.abort();
        }
        if let Link::Unix { path, .. } = &self.link {
            let _ = std::fs::remove_file(path);
        }
    }
}
