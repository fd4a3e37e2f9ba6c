package org.apache.james.consistency.harness;

import static com.google.inject.Scopes.SINGLETON;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.james.backends.cassandra.HarnessTestingSession;
import org.apache.james.backends.cassandra.components.CassandraModule;
import org.apache.james.backends.cassandra.init.CassandraTypesProvider;
import org.apache.james.backends.cassandra.init.ClusterFactory;
import org.apache.james.backends.cassandra.init.KeyspaceFactory;
import org.apache.james.backends.cassandra.init.SessionWithInitializedTablesFactory;
import org.apache.james.backends.cassandra.init.configuration.CassandraConfiguration;
import org.apache.james.backends.cassandra.init.configuration.ClusterConfiguration;
import org.apache.james.backends.cassandra.versions.CassandraSchemaVersionModule;
import org.apache.james.blob.api.BlobId;
import org.apache.james.blob.api.BlobStore;
import org.apache.james.blob.api.BucketName;
import org.apache.james.blob.api.HashBlobId;
import org.apache.james.blob.cassandra.CassandraBlobModule;
import org.apache.james.blob.cassandra.CassandraBlobStore;
import org.apache.james.blob.cassandra.CassandraDumbBlobStore;
import org.apache.james.mailbox.acl.SimpleGroupMembershipResolver;
import org.apache.james.mailbox.acl.UnionMailboxACLResolver;
import org.apache.james.mailbox.cassandra.CassandraMailboxManager;
import org.apache.james.mailbox.cassandra.CassandraMailboxSessionMapperFactory;
import org.apache.james.mailbox.cassandra.ids.CassandraMessageId;
import org.apache.james.mailbox.cassandra.modules.CassandraAclModule;
import org.apache.james.mailbox.cassandra.modules.CassandraAnnotationModule;
import org.apache.james.mailbox.cassandra.modules.CassandraApplicableFlagsModule;
import org.apache.james.mailbox.cassandra.modules.CassandraAttachmentModule;
import org.apache.james.mailbox.cassandra.modules.CassandraDeletedMessageModule;
import org.apache.james.mailbox.cassandra.modules.CassandraFirstUnseenModule;
import org.apache.james.mailbox.cassandra.modules.CassandraMailboxCounterModule;
import org.apache.james.mailbox.cassandra.modules.CassandraMailboxModule;
import org.apache.james.mailbox.cassandra.modules.CassandraMailboxRecentsModule;
import org.apache.james.mailbox.cassandra.modules.CassandraMessageModule;
import org.apache.james.mailbox.cassandra.modules.CassandraModSeqModule;
import org.apache.james.mailbox.cassandra.modules.CassandraQuotaModule;
import org.apache.james.mailbox.cassandra.modules.CassandraSubscriptionModule;
import org.apache.james.mailbox.cassandra.modules.CassandraUidModule;
import org.apache.james.mailbox.cassandra.quota.CassandraCurrentQuotaManager;
import org.apache.james.mailbox.cassandra.quota.CassandraGlobalMaxQuotaDao;
import org.apache.james.mailbox.cassandra.quota.CassandraPerDomainMaxQuotaDao;
import org.apache.james.mailbox.cassandra.quota.CassandraPerUserMaxQuotaDao;
import org.apache.james.mailbox.cassandra.quota.CassandraPerUserMaxQuotaManager;
import org.apache.james.mailbox.events.InVMEventBus;
import org.apache.james.mailbox.events.MemoryEventDeadLetters;
import org.apache.james.mailbox.events.RetryBackoffConfiguration;
import org.apache.james.mailbox.events.delivery.InVmEventDelivery;
import org.apache.james.mailbox.model.MessageId;
import org.apache.james.mailbox.store.MailboxManagerConfiguration;
import org.apache.james.mailbox.store.NoMailboxPathLocker;
import org.apache.james.mailbox.store.PreDeletionHooks;
import org.apache.james.mailbox.store.SessionProviderImpl;
import org.apache.james.mailbox.store.StoreMailboxAnnotationManager;
import org.apache.james.mailbox.store.StoreRightManager;
import org.apache.james.mailbox.store.event.MailboxAnnotationListener;
import org.apache.james.mailbox.store.extractor.DefaultTextExtractor;
import org.apache.james.mailbox.store.mail.model.impl.MessageParser;
import org.apache.james.mailbox.store.quota.DefaultUserQuotaRootResolver;
import org.apache.james.mailbox.store.quota.ListeningCurrentQuotaUpdater;
import org.apache.james.mailbox.store.quota.QuotaComponents;
import org.apache.james.mailbox.store.quota.StoreQuotaManager;
import org.apache.james.mailbox.store.search.SimpleMessageSearchIndex;
import org.apache.james.metrics.tests.RecordingMetricFactory;
import org.apache.james.util.Host;

import com.datastax.driver.core.Cluster;
import com.datastax.driver.core.Session;
import com.google.inject.Guice;
import com.google.inject.Injector;
import com.google.inject.name.Names;

/**
 * A James 3.5.0 mailbox stack on one keyspace, wired as James's own tests wire it (CassandraCluster,
 * GuiceUtils.testInjector, CassandraMailboxManagerProvider), without docker: James's ClusterFactory, KeyspaceFactory
 * and SessionWithInitializedTablesFactory (which creates every type and table of the modules) on host:port.
 */
class JamesPlatform implements AutoCloseable {
    static final String JAMES_VERSION = "3.5.0";

    /** The mailbox modules of a James 3.5.0 Cassandra server (MailboxAggregateModule.MODULE_WITH_QUOTA). */
    static final CassandraModule MODULE = CassandraModule.aggregateModules(
        CassandraSchemaVersionModule.MODULE,
        CassandraAclModule.MODULE,
        CassandraMailboxModule.MODULE,
        CassandraMessageModule.MODULE,
        CassandraBlobModule.MODULE,
        CassandraAttachmentModule.MODULE,
        CassandraMailboxCounterModule.MODULE,
        CassandraMailboxRecentsModule.MODULE,
        CassandraFirstUnseenModule.MODULE,
        CassandraUidModule.MODULE,
        CassandraModSeqModule.MODULE,
        CassandraSubscriptionModule.MODULE,
        CassandraDeletedMessageModule.MODULE,
        CassandraAnnotationModule.MODULE,
        CassandraApplicableFlagsModule.MODULE,
        CassandraQuotaModule.MODULE);

    /** James's EventBusTestFixture.RETRY_BACKOFF_CONFIGURATION: a failing listener gives up after three retries from
     * 5 ms, instead of DEFAULT's eight from 100 ms. */
    private static final RetryBackoffConfiguration RETRY_BACKOFF_CONFIGURATION = RetryBackoffConfiguration.builder()
        .maxRetries(3)
        .firstBackoff(Duration.ofMillis(5))
        .jitterFactor(0.5)
        .build();
    private static final int LIMIT_ANNOTATIONS = 3;
    private static final int LIMIT_ANNOTATION_SIZE = 30;

    /** Remembers the last message id James generated, so that a failed append can still be located. */
    static class RecordingMessageIdFactory extends CassandraMessageId.Factory {
        private final AtomicReference<CassandraMessageId> last = new AtomicReference<>();

        @Override
        public CassandraMessageId generate() {
            CassandraMessageId generated = super.generate();
            last.set(generated);
            return generated;
        }

        Optional<CassandraMessageId> last() {
            return Optional.ofNullable(last.get());
        }
    }

    final Cluster cluster;
    final HarnessTestingSession session;
    final Injector injector;
    final RecordingMessageIdFactory messageIdFactory = new RecordingMessageIdFactory();
    final CassandraMailboxManager mailboxManager;
    CassandraCurrentQuotaManager currentQuotaManager;
    DefaultUserQuotaRootResolver quotaRootResolver;

    /** Connects to an existing keyspace, or creates it first when createKeyspace (the schema and seed commands). */
    static JamesPlatform connect(Options options, boolean createKeyspace) throws BadInput {
        ClusterConfiguration.Builder configuration = ClusterConfiguration.builder()
            .host(Host.from(options.host(), options.port()))
            .keyspace(options.keyspace())
            .replicationFactor(options.intValue("--replication-factor", 1))
            .maxRetry(1)
            .minDelay(100);
        Optional<String> username = Optional.ofNullable(System.getenv("CASSANDRA_USERNAME")).filter(s -> !s.isEmpty());
        Optional<String> password = Optional.ofNullable(System.getenv("CASSANDRA_PASSWORD")).filter(s -> !s.isEmpty());
        configuration.username(username).password(password);
        if (createKeyspace) {
            configuration.createKeyspace();
        }
        ClusterConfiguration clusterConfiguration = configuration.build();
        Cluster cluster = ClusterFactory.create(clusterConfiguration);
        try {
            if (!createKeyspace && !KeyspaceFactory.keyspaceExist(cluster, options.keyspace())) {
                throw new BadInput("keyspace '" + options.keyspace() + "' does not exist");
            }
            KeyspaceFactory.createKeyspace(clusterConfiguration, cluster);
            Session session = new SessionWithInitializedTablesFactory(clusterConfiguration, cluster, MODULE).get();
            return new JamesPlatform(cluster, new HarnessTestingSession(session));
        } catch (RuntimeException | BadInput e) {
            cluster.close();
            throw e;
        }
    }

    private JamesPlatform(Cluster cluster, HarnessTestingSession session) {
        this.cluster = cluster;
        this.session = session;
        CassandraTypesProvider typesProvider = new CassandraTypesProvider(MODULE, session);
        this.injector = Guice.createInjector(
            binder -> binder.bind(MessageId.Factory.class).toInstance(messageIdFactory),
            binder -> binder.bind(CassandraMessageId.Factory.class).toInstance(messageIdFactory),
            binder -> binder.bind(BlobId.Factory.class).toInstance(new HashBlobId.Factory()),
            binder -> binder.bind(BlobStore.class).to(CassandraBlobStore.class),
            binder -> binder.bind(CassandraDumbBlobStore.class).in(SINGLETON),
            binder -> binder.bind(BucketName.class)
                .annotatedWith(Names.named(CassandraDumbBlobStore.DEFAULT_BUCKET))
                .toInstance(BucketName.DEFAULT),
            binder -> binder.bind(Session.class).toInstance(session),
            binder -> binder.bind(CassandraTypesProvider.class).toInstance(typesProvider),
            binder -> binder.bind(CassandraConfiguration.class).toInstance(CassandraConfiguration.DEFAULT_CONFIGURATION));
        this.mailboxManager = mailboxManager(injector.getInstance(CassandraMailboxSessionMapperFactory.class));
    }

    /** CassandraMailboxManagerProvider.provideMailboxManager of James 3.5.0's tests. */
    private CassandraMailboxManager mailboxManager(CassandraMailboxSessionMapperFactory mapperFactory) {
        InVMEventBus eventBus = new InVMEventBus(new InVmEventDelivery(new RecordingMetricFactory()),
            RETRY_BACKOFF_CONFIGURATION, new MemoryEventDeadLetters());
        StoreRightManager storeRightManager = new StoreRightManager(mapperFactory, new UnionMailboxACLResolver(),
            new SimpleGroupMembershipResolver(), eventBus);
        StoreMailboxAnnotationManager annotationManager = new StoreMailboxAnnotationManager(mapperFactory,
            storeRightManager, LIMIT_ANNOTATIONS, LIMIT_ANNOTATION_SIZE);
        SessionProviderImpl sessionProvider = new SessionProviderImpl(null, null);
        CassandraPerUserMaxQuotaManager maxQuotaManager = new CassandraPerUserMaxQuotaManager(
            new CassandraPerUserMaxQuotaDao(session),
            new CassandraPerDomainMaxQuotaDao(session),
            new CassandraGlobalMaxQuotaDao(session));
        currentQuotaManager = new CassandraCurrentQuotaManager(session);
        StoreQuotaManager storeQuotaManager = new StoreQuotaManager(currentQuotaManager, maxQuotaManager);
        quotaRootResolver = new DefaultUserQuotaRootResolver(sessionProvider, mapperFactory);
        ListeningCurrentQuotaUpdater quotaUpdater = new ListeningCurrentQuotaUpdater(currentQuotaManager,
            quotaRootResolver, eventBus, storeQuotaManager);
        QuotaComponents quotaComponents = new QuotaComponents(maxQuotaManager, storeQuotaManager, quotaRootResolver);
        SimpleMessageSearchIndex index = new SimpleMessageSearchIndex(mapperFactory, mapperFactory,
            new DefaultTextExtractor());

        CassandraMailboxManager manager = new CassandraMailboxManager(mapperFactory, sessionProvider,
            new NoMailboxPathLocker(), new MessageParser(), messageIdFactory, eventBus, annotationManager,
            storeRightManager, quotaComponents, index, MailboxManagerConfiguration.DEFAULT,
            PreDeletionHooks.NO_PRE_DELETION_HOOK);
        eventBus.register(quotaUpdater);
        eventBus.register(new MailboxAnnotationListener(mapperFactory, sessionProvider));
        return manager;
    }

    <T> T get(Class<T> type) {
        return injector.getInstance(type);
    }

    @Override
    public void close() {
        cluster.closeAsync().force();
    }
}
