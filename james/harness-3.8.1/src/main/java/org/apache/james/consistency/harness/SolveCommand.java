package org.apache.james.consistency.harness;

import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.james.domainlist.cassandra.CassandraDomainList;
import org.apache.james.mailbox.cassandra.CassandraMailboxManager;
import org.apache.james.mailbox.cassandra.mail.task.RecomputeMailboxCountersService;
import org.apache.james.mailbox.cassandra.mail.task.RecomputeMailboxCountersTask;
import org.apache.james.mailbox.cassandra.mail.task.RecomputeMailboxCountersTaskAdditionalInformationDTO;
import org.apache.james.mailbox.cassandra.mail.task.SolveMailboxInconsistenciesService;
import org.apache.james.mailbox.cassandra.mail.task.SolveMailboxInconsistenciesTask;
import org.apache.james.mailbox.cassandra.mail.task.SolveMailboxInconsistenciesTaskAdditionalInformationDTO;
import org.apache.james.mailbox.cassandra.mail.task.SolveMessageInconsistenciesService;
import org.apache.james.mailbox.cassandra.mail.task.SolveMessageInconsistenciesTask;
import org.apache.james.mailbox.cassandra.mail.task.SolveMessageInconsistenciesTaskAdditionalInformationDTO;
import org.apache.james.mailbox.quota.task.RecomputeCurrentQuotasService;
import org.apache.james.mailbox.quota.task.RecomputeCurrentQuotasTask;
import org.apache.james.mailbox.quota.task.RecomputeCurrentQuotasTaskAdditionalInformationDTO;
import org.apache.james.mailbox.store.quota.CurrentQuotaCalculator;
import org.apache.james.server.task.json.JsonTaskAdditionalInformationSerializer;
import org.apache.james.task.Task;
import org.apache.james.user.cassandra.CassandraUsersDAO;
import org.apache.james.user.lib.UsersRepositoryImpl;

/**
 * `solve TARGET --keyspace K [--messages-per-second N] [--users-per-second N]`: James 3.8.1's own task run to
 * completion in this process (what webadmin's task manager would run), its additionalInformation serialized by
 * James's own DTO module. TARGET: messages | mailboxes | counters | quotas.
 */
public class SolveCommand {
    public static Map<String, Object> run(Arguments arguments) throws Exception {
        if (arguments.positional().size() != 1) {
            throw new BadInput("solve needs one TARGET: messages | mailboxes | counters | quotas");
        }
        String target = arguments.positional().get(0);
        if (!Map.of("messages", 1, "mailboxes", 1, "counters", 1, "quotas", 1).containsKey(target)) {
            throw new BadInput("unknown solve target " + target + " (James 3.8.1 has: messages, mailboxes, counters, quotas)");
        }
        try (Platform platform = Platform.connectExisting(arguments)) {
            Task task;
            JsonTaskAdditionalInformationSerializer serializer;
            switch (target) {
                case "messages":
                    task = new SolveMessageInconsistenciesTask(
                        platform.injector.getInstance(SolveMessageInconsistenciesService.class),
                        new SolveMessageInconsistenciesService.RunningOptions(arguments.integer("messages-per-second", 100)));
                    serializer = JsonTaskAdditionalInformationSerializer.of(
                        SolveMessageInconsistenciesTaskAdditionalInformationDTO.module());
                    break;
                case "mailboxes":
                    task = new SolveMailboxInconsistenciesTask(
                        platform.injector.getInstance(SolveMailboxInconsistenciesService.class));
                    serializer = JsonTaskAdditionalInformationSerializer.of(
                        SolveMailboxInconsistenciesTaskAdditionalInformationDTO.module());
                    break;
                case "counters":
                    task = new RecomputeMailboxCountersTask(
                        platform.injector.getInstance(RecomputeMailboxCountersService.class),
                        RecomputeMailboxCountersService.Options.recheckMessageProjection());
                    serializer = JsonTaskAdditionalInformationSerializer.of(
                        RecomputeMailboxCountersTaskAdditionalInformationDTO.module());
                    break;
                default:
                    task = new RecomputeCurrentQuotasTask(quotaService(platform),
                        RecomputeCurrentQuotasService.RunningOptions.withUsersPerSecond(arguments.integer("users-per-second", 1)));
                    serializer = JsonTaskAdditionalInformationSerializer.of(
                        RecomputeCurrentQuotasTaskAdditionalInformationDTO.module());
            }
            long start = System.nanoTime();
            Task.Result result = task.run();
            double seconds = (System.nanoTime() - start) / 1e9;
            Map<String, Object> report = new LinkedHashMap<>();
            report.put("target", target);
            report.put("james", Main.JAMES_VERSION);
            report.put("result", result == Task.Result.COMPLETED ? "COMPLETED" : "PARTIAL");
            report.put("additionalInformation", Main.JSON.readTree(serializer.serialize(task.details().orElseThrow())));
            report.put("seconds", Math.round(seconds * 1000) / 1000.0);
            return report;
        }
    }

    private static RecomputeCurrentQuotasService quotaService(Platform platform) {
        CassandraMailboxManager manager = platform.mailboxManager();
        UsersRepositoryImpl<CassandraUsersDAO> users = new UsersRepositoryImpl<>(
            new CassandraDomainList(null, platform.session), new CassandraUsersDAO(platform.session));
        return new RecomputeCurrentQuotasService(users, platform.currentQuotaManager(),
            new CurrentQuotaCalculator(platform.mapperFactory(), platform.quotaRootResolver()),
            platform.quotaRootResolver(), manager.getSessionProvider(), manager);
    }
}
