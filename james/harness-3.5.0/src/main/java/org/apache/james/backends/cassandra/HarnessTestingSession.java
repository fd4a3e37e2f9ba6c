package org.apache.james.backends.cassandra;

import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

import com.datastax.driver.core.ResultSet;
import com.datastax.driver.core.ResultSetFuture;
import com.datastax.driver.core.Session;
import com.datastax.driver.core.Statement;
import com.google.common.util.concurrent.AbstractFuture;
import com.google.common.util.concurrent.Uninterruptibles;

/**
 * James's own TestingSession (its constructor is package-private, hence this package), with one change: the failure
 * its Scenario injects reaches James as a future failing a few milliseconds later, as a real write timeout does,
 * instead of an exception thrown by executeAsync itself. James 3.5.0 starts the two message-table writes of an add
 * (and of a delete) in parallel: with the synchronous throw the first failing statement would stop the second one
 * from being sent at all, which no Cassandra failure does. And synchronous executions go through the Scenario too
 * (TestingSession only hooks executeAsync): James 3.5.0's CassandraCurrentQuotaManager uses Session.execute.
 */
public class HarnessTestingSession extends TestingSession {
    private static final long FAILURE_DELAY_MILLIS = 20;

    private final ScheduledExecutorService failureTimer = Executors.newSingleThreadScheduledExecutor(runnable -> {
        Thread thread = new Thread(runnable, "injected-failure-timer");
        thread.setDaemon(true);
        return thread;
    });

    public HarnessTestingSession(Session delegate) {
        super(delegate);
    }

    @Override
    public ResultSet execute(Statement statement) {
        return executeAsync(statement).getUninterruptibly();
    }

    @Override
    public ResultSetFuture executeAsync(Statement statement) {
        try {
            return super.executeAsync(statement);
        } catch (RuntimeException injectedFailure) {
            FailedResultSetFuture failed = new FailedResultSetFuture();
            failureTimer.schedule(() -> failed.fail(injectedFailure), FAILURE_DELAY_MILLIS, TimeUnit.MILLISECONDS);
            return failed;
        }
    }

    private static class FailedResultSetFuture extends AbstractFuture<ResultSet> implements ResultSetFuture {
        void fail(Throwable failure) {
            setException(failure);
        }

        @Override
        public ResultSet getUninterruptibly() {
            try {
                return Uninterruptibles.getUninterruptibly(this);
            } catch (java.util.concurrent.ExecutionException e) {
                throw new RuntimeException(e.getCause());
            }
        }

        @Override
        public ResultSet getUninterruptibly(long timeout, TimeUnit unit) throws java.util.concurrent.TimeoutException {
            try {
                return Uninterruptibles.getUninterruptibly(this, timeout, unit);
            } catch (java.util.concurrent.ExecutionException e) {
                throw new RuntimeException(e.getCause());
            }
        }
    }
}
