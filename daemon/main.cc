#include "daemon/daemon.h"

int main(int argc, char** argv) { return heapwatch::daemon::DaemonMain(argc, argv); }
