package org.apache.james.consistency.harness;

import java.net.InetSocketAddress;
import java.time.Clock;
import java.time.Duration;
import java.util.Set;

import org.apache.james.backends.cassandra.TestingSession;
import org.apache.james.backends.cassandra.components.CassandraModule;
import org.apache.james.backends.cassandra.init.CassandraTypesProvider;
import org.apache.james.backends.cassandra.init.CassandraZonedDateTimeModule;
import org.apache.james.backends.cassandra.init.KeyspaceFactory;
import org.apache.james.backends.cassandra.init.SessionWithInitializedTablesFactory;
import org.apache.james.backends.cassandra.init.configuration.CassandraConfiguration;
import org.apache.james.backends.cassandra.init.configuration.KeyspaceConfiguration;
import org.apache.james.backends.cassandra.versions.CassandraSchemaVersionDAO;
import org.apache.james.backends.cassandra.versions.CassandraSchemaVersionManager;
import org.apache.james.backends.cassandra.versions.CassandraSchemaVersionModule;
import org.apache.james.blob.api.BlobId;
import org.apache.james.blob.api.BlobStore;
import org.apache.james.blob.api.HashBlobId;
import org.apache.james.blob.cassandra.CassandraBlobModule;
import org.apache.james.blob.cassandra.CassandraBlobStoreFactory;
import org.apache.james.domainlist.cassandra.CassandraDomainListModule;
import org.apache.james.events.InVMEventBus;
import org.apache.james.events.MemoryEventDeadLetters;
import org.apache.james.events.RetryBackoffConfiguration;
import org.apache.james.events.delivery.InVmEventDelivery;
import org.apache.james.eventsourcing.Event;
import org.apache.james.eventsourcing.eventstore.EventStore;
import org.apache.james.eventsourcing.eventstore.cassandra.CassandraEventStore;
import org.apache.james.eventsourcing.eventstore.cassandra.CassandraEventStoreModule;
import org.apache.james.eventsourcing.eventstore.cassandra.EventNestedTypes;
import org.apache.james.eventsourcing.eventstore.cassandra.dto.EventDTO;
import org.apache.james.eventsourcing.eventstore.cassandra.dto.EventDTOModule;
import org.apache.james.jmap.cassandra.filtering.FilteringRuleSetDefineDTOModules;
import org.apache.james.json.DTO;
import org.apache.james.json.DTOModule;
import org.apache.james.mailbox.acl.UnionMailboxACLResolver;
import org.apache.james.mailbox.cassandra.CassandraMailboxManager;
import org.apache.james.mailbox.cassandra.CassandraMailboxSessionMapperFactory;
import org.apache.james.mailbox.cassandra.ids.CassandraMessageId;
import org.apache.james.mailbox.cassandra.mail.CassandraACLMapper;
import org.apache.james.mailbox.cassandra.mail.CassandraModSeqProvider;
import org.apache.james.mailbox.cassandra.mail.CassandraUidProvider;
import org.apache.james.mailbox.cassandra.mail.eventsourcing.acl.ACLModule;
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
import org.apache.james.mailbox.cassandra.modules.CassandraThreadModule;
import org.apache.james.mailbox.cassandra.modules.CassandraUidModule;
import org.apache.james.mailbox.cassandra.quota.CassandraCurrentQuotaManager;
import org.apache.james.mailbox.cassandra.quota.CassandraGlobalMaxQuotaDao;
import org.apache.james.mailbox.cassandra.quota.CassandraPerDomainMaxQuotaDao;
import org.apache.james.mailbox.cassandra.quota.CassandraPerUserMaxQuotaDao;
import org.apache.james.mailbox.cassandra.quota.CassandraPerUserMaxQuotaManager;
import org.apache.james.mailbox.model.MessageId;
import org.apache.james.mailbox.store.BatchSizes;
import org.apache.james.mailbox.store.MailboxManagerConfiguration;
import org.apache.james.mailbox.store.NoMailboxPathLocker;
import org.apache.james.mailbox.store.PreDeletionHooks;
import org.apache.james.mailbox.store.SessionProviderImpl;
import org.apache.james.mailbox.store.StoreMailboxAnnotationManager;
import org.apache.james.mailbox.store.StoreRightManager;
import org.apache.james.mailbox.store.event.MailboxAnnotationListener;
import org.apache.james.mailbox.store.extractor.DefaultTextExtractor;
import org.apache.james.mailbox.cassandra.mail.ACLMapper;
import org.apache.james.mailbox.store.mail.ModSeqProvider;
import org.apache.james.mailbox.store.mail.NaiveThreadIdGuessingAlgorithm;
import org.apache.james.mailbox.store.mail.UidProvider;
import org.apache.james.mailbox.store.mail.model.impl.MessageParser;
import org.apache.james.mailbox.store.quota.DefaultUserQuotaRootResolver;
import org.apache.james.mailbox.store.quota.ListeningCurrentQuotaUpdater;
import org.apache.james.mailbox.store.quota.QuotaComponents;
import org.apache.james.mailbox.store.quota.StoreQuotaManager;
import org.apache.james.mailbox.store.search.SimpleMessageSearchIndex;
import org.apache.james.metrics.tests.RecordingMetricFactory;
import org.apache.james.user.cassandra.CassandraUsersRepositoryModule;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.CqlSessionBuilder;
import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverConfigLoader;
import com.google.common.collect.ImmutableSet;
import com.google.inject.Guice;
import com.google.inject.Injector;
import com.google.inject.TypeLiteral;
import com.google.inject.multibindings.Multibinder;
import com.google.inject.name.Names;

/**
 * James 3.8.1's Cassandra mailbox wired by hand against the project's node, as its own tests wire it
 * (mailbox-cassandra's GuiceUtils and CassandraMailboxManagerProvider), without docker: a CqlSession built here,
 * wrapped in backends-cassandra's TestingSession so a Scenario can fail chosen statements.
 */
public class Platform implements AutoCloseable {
    /** James's EventBusTestFixture.RETRY_BACKOFF_CONFIGURATION: a listener failing under an injected fault gives up
     * after three retries from 5 ms, instead of DEFAULT's eight from 100 ms (about 25 s per failed event). */
    private static final RetryBackoffConfiguration RETRY_BACKOFF_CONFIGURATION = RetryBackoffConfiguration.builder()
        .maxRetries(3)
        .firstBackoff(Duration.ofMillis(5))
        .jitterFactor(0.5)
        .build();

    /** The CassandraModules a James 3.8.1 distributed server registers for mailbox data (guice/cassandra modules). */
    public static final CassandraModule MODULES = CassandraModule.aggregateModules(
        CassandraZonedDateTimeModule.MODULE,
        CassandraSchemaVersionModule.MODULE,
        CassandraAclModule.MODULE,
        CassandraAttachmentModule.MODULE,
        CassandraMailboxModule.MODULE,
        CassandraMessageModule.MODULE,
        CassandraMailboxCounterModule.MODULE,
        CassandraAnnotationModule.MODULE,
        CassandraApplicableFlagsModule.MODULE,
        CassandraDeletedMessageModule.MODULE,
        CassandraFirstUnseenModule.MODULE,
        CassandraMailboxRecentsModule.MODULE,
        CassandraModSeqModule.MODULE,
        CassandraSubscriptionModule.MODULE,
        CassandraUidModule.MODULE,
        CassandraThreadModule.MODULE,
        CassandraQuotaModule.MODULE,
        CassandraBlobModule.MODULE,
        CassandraEventStoreModule.MODULE(),
        CassandraUsersRepositoryModule.MODULE,
        CassandraDomainListModule.MODULE);

    public final String keyspace;
    public final TestingSession session;
    public final Injector injector;
    public final RecordingMessageIdFactory messageIds = new RecordingMessageIdFactory();
    private CassandraMailboxManager mailboxManager;
    private CassandraPerUserMaxQuotaManager maxQuotaManager;
    private DefaultUserQuotaRootResolver quotaRootResolver;
    private CassandraCurrentQuotaManager currentQuotaManager;

    /** Connects to keyspace K (created, RF given, if absent) and creates every type and table of {@link #MODULES}. */
    public static Platform connect(Arguments arguments) {
        return connect(arguments, true);
    }

    /** Connects to an existing keyspace K (exit 2 when it is missing), its tables left as they are. */
    public static Platform connectExisting(Arguments arguments) {
        return connect(arguments, false);
    }

    private static Platform connect(Arguments arguments, boolean createSchema) {
        String host = arguments.get("host", "127.0.0.1");
        int port = arguments.integer("port", 9042);
        String keyspace = arguments.required("keyspace");
        int replicationFactor = arguments.integer("replication-factor", 1);
        if (!keyspace.matches("[A-Za-z][A-Za-z0-9_]{0,47}")) {
            throw new BadInput("invalid keyspace name " + keyspace);
        }
        try (CqlSession admin = builder(host, port).build()) {
            if (!createSchema && !KeyspaceFactory.keyspaceExist(admin, keyspace.toLowerCase())) {
                throw new BadInput("keyspace " + keyspace + " does not exist: run james schema or james seed first");
            }
            KeyspaceFactory.createKeyspace(KeyspaceConfiguration.builder()
                .keyspace(keyspace)
                .replicationFactor(replicationFactor)
                .durableWrites(true), admin).block();
        }
        TestingSession session = new Cassandra5Session(builder(host, port).withKeyspace(keyspace).build());
        if (createSchema) {
            // James's own table creation (CassandraTableManager / CassandraTypesCreator), then the schema version.
            new SessionWithInitializedTablesFactory(session, MODULES);
            // That factory records the schema version only when it created every table itself; the tables here are
            // James 3.8.1's latest, so a keyspace without a version (e.g. a creation interrupted earlier) is at the max.
            CassandraSchemaVersionDAO versions = new CassandraSchemaVersionDAO(session);
            if (versions.getCurrentSchemaVersion().block().isEmpty()) {
                versions.updateVersion(CassandraSchemaVersionManager.MAX_VERSION).block();
            }
        }
        return new Platform(keyspace, session);
    }

    private static CqlSessionBuilder builder(String host, int port) {
        CqlSessionBuilder builder = CqlSession.builder()
            .addContactPoint(new InetSocketAddress(host, port))
            .withLocalDatacenter("datacenter1")
            // The driver's default 2 s is less than a schema change can take on a busy node (a CI machine running
            // Spark beside it); James's deployments configure longer timeouts too.
            .withConfigLoader(DriverConfigLoader.programmaticBuilder()
                .withDuration(DefaultDriverOption.REQUEST_TIMEOUT, Duration.ofSeconds(30))
                // A closed session's event loops wait 2 s for more work by default: 4 s of every short command.
                .withInt(DefaultDriverOption.NETTY_IO_SHUTDOWN_QUIET_PERIOD, 0)
                .withInt(DefaultDriverOption.NETTY_ADMIN_SHUTDOWN_QUIET_PERIOD, 0)
                .build());
        String username = System.getenv("CASSANDRA_USERNAME");
        String password = System.getenv("CASSANDRA_PASSWORD");
        if (username != null && !username.isEmpty()) {
            builder.withAuthCredentials(username, password == null ? "" : password);
        }
        return builder;
    }

    private Platform(String keyspace, TestingSession session) {
        this.keyspace = keyspace;
        this.session = session;
        CassandraTypesProvider typesProvider = new CassandraTypesProvider(session);
        this.injector = Guice.createInjector(
            binder -> binder.bind(MessageId.Factory.class).toInstance(messageIds),
            binder -> binder.bind(CassandraMessageId.Factory.class).toInstance(new CassandraMessageId.Factory()),
            binder -> binder.bind(BatchSizes.class).toInstance(BatchSizes.defaultValues()),
            binder -> binder.bind(UidProvider.class).to(CassandraUidProvider.class),
            binder -> binder.bind(ModSeqProvider.class).to(CassandraModSeqProvider.class),
            binder -> binder.bind(ACLMapper.class).to(CassandraACLMapper.class),
            binder -> binder.bind(BlobId.Factory.class).toInstance(new HashBlobId.Factory()),
            binder -> binder.bind(BlobStore.class).toInstance(
                CassandraBlobStoreFactory.forTesting(session, new RecordingMetricFactory()).passthrough()),
            binder -> binder.bind(CqlSession.class).toInstance(session),
            binder -> {
                Multibinder<EventDTOModule<? extends Event, ? extends EventDTO>> events =
                    Multibinder.newSetBinder(binder, new TypeLiteral<EventDTOModule<? extends Event, ? extends EventDTO>>() {});
                events.addBinding().toInstance(ACLModule.ACL_UPDATE);
                events.addBinding().toInstance(FilteringRuleSetDefineDTOModules.FILTERING_RULE_SET_DEFINED);
                events.addBinding().toInstance(FilteringRuleSetDefineDTOModules.FILTERING_INCREMENT);
            },
            binder -> binder.bind(new TypeLiteral<Set<DTOModule<?, ? extends DTO>>>() {})
                .annotatedWith(Names.named(EventNestedTypes.EVENT_NESTED_TYPES_INJECTION_NAME))
                .toInstance(ImmutableSet.of()),
            binder -> binder.bind(EventStore.class).to(CassandraEventStore.class),
            binder -> binder.bind(CassandraTypesProvider.class).toInstance(typesProvider),
            binder -> binder.bind(CassandraConfiguration.class).toInstance(CassandraConfiguration.DEFAULT_CONFIGURATION),
            binder -> binder.bind(Clock.class).toInstance(Clock.systemUTC()));
    }

    public CassandraMailboxSessionMapperFactory mapperFactory() {
        return injector.getInstance(CassandraMailboxSessionMapperFactory.class);
    }

    /** The mailbox manager as CassandraMailboxManagerProvider builds it: quotas, annotations, deletion listener. */
    public synchronized CassandraMailboxManager mailboxManager() {
        if (mailboxManager != null) {
            return mailboxManager;
        }
        CassandraMailboxSessionMapperFactory mapperFactory = mapperFactory();
        InVMEventBus eventBus = new InVMEventBus(new InVmEventDelivery(new RecordingMetricFactory()),
            RETRY_BACKOFF_CONFIGURATION, new MemoryEventDeadLetters());
        StoreRightManager rightManager = new StoreRightManager(mapperFactory, new UnionMailboxACLResolver(), eventBus);
        StoreMailboxAnnotationManager annotationManager = new StoreMailboxAnnotationManager(mapperFactory, rightManager);
        SessionProviderImpl sessionProvider = new SessionProviderImpl(null, null);
        maxQuotaManager = new CassandraPerUserMaxQuotaManager(new CassandraPerUserMaxQuotaDao(session),
            new CassandraPerDomainMaxQuotaDao(session), new CassandraGlobalMaxQuotaDao(session));
        currentQuotaManager = new CassandraCurrentQuotaManager(session);
        StoreQuotaManager quotaManager = new StoreQuotaManager(currentQuotaManager, maxQuotaManager);
        quotaRootResolver = new DefaultUserQuotaRootResolver(sessionProvider, mapperFactory);
        ListeningCurrentQuotaUpdater quotaUpdater = new ListeningCurrentQuotaUpdater(currentQuotaManager,
            quotaRootResolver, eventBus, quotaManager);
        QuotaComponents quotaComponents = new QuotaComponents(maxQuotaManager, quotaManager, quotaRootResolver);
        SimpleMessageSearchIndex index = new SimpleMessageSearchIndex(mapperFactory, mapperFactory,
            new DefaultTextExtractor(), null);
        mailboxManager = new CassandraMailboxManager(mapperFactory, sessionProvider, new NoMailboxPathLocker(),
            new MessageParser(), messageIds, eventBus, annotationManager, rightManager, quotaComponents, index,
            MailboxManagerConfiguration.DEFAULT, PreDeletionHooks.NO_PRE_DELETION_HOOK,
            new NaiveThreadIdGuessingAlgorithm(), Clock.systemUTC());
        eventBus.register(quotaUpdater);
        eventBus.register(new MailboxAnnotationListener(mapperFactory, sessionProvider));
        eventBus.register(mapperFactory.deleteMessageListener());
        return mailboxManager;
    }

    public CassandraPerUserMaxQuotaManager maxQuotaManager() {
        mailboxManager();
        return maxQuotaManager;
    }

    public DefaultUserQuotaRootResolver quotaRootResolver() {
        mailboxManager();
        return quotaRootResolver;
    }

    public CassandraCurrentQuotaManager currentQuotaManager() {
        mailboxManager();
        return currentQuotaManager;
    }

    @Override
    public void close() {
        session.close();
    }
}
