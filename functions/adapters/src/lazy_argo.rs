//! [`LazyArgo`]: an Argo CD client made on first use, for a function that seldom needs one.

use std::future::Future;
use std::pin::Pin;

use medic_core::app::{Application, ApplicationSyncRequest};
use medic_core::event::AppRef;
use medic_core::ladder::RefreshKind;
use medic_core::permit::Permit;
use medic_core::ports::{ArgoApi, ArgoError, ListQuery};

/// Builds an Argo CD client; its error is the reason, for the caller's answer.
type BuildArgo<A> = Box<dyn Fn() -> Pin<Box<dyn Future<Output = Result<A, String>> + Send>> + Send + Sync>;

/// An Argo CD client made on first use. Only a signed refresh that names its apps by selector
/// calls Argo CD, so the webhook path, almost every invocation, neither reads the Argo CD token
/// (a Secrets Manager round trip of the cold start) nor builds the client. A failed build is not
/// kept: the next call tries again, and this one fails as unavailable (503, the caller retries).
pub struct LazyArgo<A> {
    client: tokio::sync::OnceCell<A>,
    build: BuildArgo<A>,
}

impl<A> LazyArgo<A> {
    pub fn new<F, Fut>(build: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<A, String>> + Send + 'static,
    {
        Self { client: tokio::sync::OnceCell::new(), build: Box::new(move || Box::pin(build())) }
    }

    /// True once the client has been built.
    pub fn is_built(&self) -> bool {
        self.client.initialized()
    }

    async fn client(&self) -> Result<&A, ArgoError> {
        self.client
            .get_or_try_init(|| (self.build)())
            .await
            .map_err(|e| ArgoError::Transient(format!("the Argo CD client could not be made: {e}")))
    }
}

impl<A: ArgoApi> ArgoApi for LazyArgo<A> {
    async fn get_app(&self, app: &AppRef) -> Result<Application, ArgoError> {
        self.client().await?.get_app(app).await
    }
    async fn list_apps(&self, query: &ListQuery) -> Result<Vec<Application>, ArgoError> {
        self.client().await?.list_apps(query).await
    }
    async fn refresh(&self, permit: &Permit, app: &AppRef, kind: RefreshKind) -> Result<Application, ArgoError> {
        self.client().await?.refresh(permit, app, kind).await
    }
    async fn sync(&self, permit: &Permit, app: &AppRef, request: &ApplicationSyncRequest) -> Result<Application, ArgoError> {
        self.client().await?.sync(permit, app, request).await
    }
    async fn terminate_operation(&self, permit: &Permit, app: &AppRef) -> Result<(), ArgoError> {
        self.client().await?.terminate_operation(permit, app).await
    }
    async fn credential_expiry(&self) -> Result<Option<chrono::DateTime<chrono::Utc>>, String> {
        self.client().await.map_err(|e| e.to_string())?.credential_expiry().await
    }
    async fn revision_metadata(
        &self,
        app: &AppRef,
        revision: &str,
        source_index: Option<usize>,
    ) -> Result<Option<medic_core::app::RevisionMetadata>, ArgoError> {
        self.client().await?.revision_metadata(app, revision, source_index).await
    }
    async fn version(&self) -> Result<String, ArgoError> {
        self.client().await?.version().await
    }
}
