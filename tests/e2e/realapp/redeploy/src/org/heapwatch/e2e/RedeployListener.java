package org.heapwatch.e2e;

import jakarta.servlet.ServletContextEvent;
import jakarta.servlet.ServletContextListener;
import jakarta.servlet.annotation.WebListener;

/**
 * A web application for the class loader leak test (tests/e2e/realapp/redeploy_e2e.sh): on start it
 * loads its helper classes (Part0..PartN, as a real application loads its own code) and starts a
 * background thread. Context parameter "mode": "leaky" never stops the thread, so after a redeploy
 * the thread (its Runnable, a class of this application, and its context class loader) keeps the
 * old web application class loader and every class it defined; "clean" stops and joins it on
 * shutdown, so the old loader can be unloaded.
 */
@WebListener
public class RedeployListener implements ServletContextListener {
  private Thread worker;
  private volatile boolean running = true;

  @Override
  public void contextInitialized(ServletContextEvent event) {
    Parts.loadAll();
    worker = new Thread(new Ticker(), "heapwatch-e2e-ticker");
    worker.setDaemon(true);
    worker.start();
  }

  @Override
  public void contextDestroyed(ServletContextEvent event) {
    if ("clean".equals(event.getServletContext().getInitParameter("mode"))) {
      running = false;
      worker.interrupt();
      try {
        worker.join(5000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private final class Ticker implements Runnable {
    @Override
    public void run() {
      while (running) {
        try {
          Thread.sleep(1000);
        } catch (InterruptedException e) {
          return;
        }
      }
    }
  }
}
