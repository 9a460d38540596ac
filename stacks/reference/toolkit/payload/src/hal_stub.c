/* The stand-in for the driver's libascend_hal.so that the toolkit installs in devlib/: what
 * libascendcl.so links against, and loads when no driver is installed (set_env.sh then puts
 * devlib on LD_LIBRARY_PATH). A host's driver provides the real one. */
#include <stdint.h>

__attribute__((visibility("default"))) int halGetDeviceCount(uint32_t *count)
{
    *count = 1; /* the CPU simulation's one device */
    return 0;
}
