#include "ctl/ctl.h"

int main(int argc, char** argv) { return heapwatch::ctl::CtlMain(argc, argv); }
