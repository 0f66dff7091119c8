// stb_image_write's code for the browser build (the PNG export): the desktop links Debian's
// libstb, which holds it; here it is compiled from the same package's header.
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include "stb_image_write.h"
