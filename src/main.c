/* kapi: command line, start-up and shutdown. */
#include <stdio.h>

int main(void)
{
    fputs("kapi: not wired yet\n", stderr);
    return 1;
}
